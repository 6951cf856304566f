//! The Model Context Protocol's JSON-RPC 2.0 framing over stdio: one request per line in,
//! one response per line out. Decoding is a pure function of the line (fuzzed), bounded in
//! size, and every failure is a JSON-RPC error, never a panic.

use serde_json::{json, Value};

/// Longest request line read (a tool call is a few hundred bytes; this bounds a hostile one).
pub const MAX_REQUEST_BYTES: usize = 1 << 20;

/// JSON-RPC error codes.
pub const PARSE_ERROR: i64 = -32700;
/// The request is not a valid JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The parameters are wrong.
pub const INVALID_PARAMS: i64 = -32602;

/// One decoded message.
#[derive(Debug, PartialEq)]
pub struct Request {
    /// The request id; `None` for a notification (no response is sent).
    pub id: Option<Value>,
    /// The method.
    pub method: String,
    /// The parameters (an object, or null).
    pub params: Value,
}

/// A JSON-RPC error to send back, with the id it answers (null when unknown).
#[derive(Debug, PartialEq)]
pub struct RpcError {
    /// The id of the request it answers.
    pub id: Value,
    /// The code.
    pub code: i64,
    /// One line saying what is wrong.
    pub message: String,
}

/// Decodes one line. An id must be a string or a number; params an object or absent.
pub fn decode(line: &[u8]) -> Result<Request, RpcError> {
    let error = |id: Value, code: i64, message: &str| RpcError {
        id,
        code,
        message: message.to_string(),
    };
    if line.len() > MAX_REQUEST_BYTES {
        return Err(error(
            Value::Null,
            INVALID_REQUEST,
            "request larger than 1 MiB",
        ));
    }
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| error(Value::Null, PARSE_ERROR, &format!("not JSON: {e}")))?;
    let Value::Object(mut map) = value else {
        return Err(error(
            Value::Null,
            INVALID_REQUEST,
            "a request is a JSON object (batches are not supported)",
        ));
    };
    let id = match map.remove("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        Some(_) => {
            return Err(error(
                Value::Null,
                INVALID_REQUEST,
                "the id must be a string or a number",
            ))
        }
    };
    let answer_to = id.clone().unwrap_or(Value::Null);
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(error(answer_to, INVALID_REQUEST, "jsonrpc must be \"2.0\""));
    }
    let Some(Value::String(method)) = map.remove("method") else {
        return Err(error(answer_to, INVALID_REQUEST, "no method"));
    };
    let params = match map.remove("params") {
        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(p @ Value::Object(_)) => p,
        Some(_) => return Err(error(answer_to, INVALID_PARAMS, "params must be an object")),
    };
    Ok(Request { id, method, params })
}

/// A success response line.
#[must_use]
pub fn result_line(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An error response line.
#[must_use]
pub fn error_line(e: &RpcError) -> String {
    json!({"jsonrpc": "2.0", "id": e.id, "error": {"code": e.code, "message": e.message}})
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_decode_and_bad_ones_are_errors() {
        let r = decode(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).unwrap();
        assert_eq!(r.method, "tools/list");
        assert_eq!(r.id, Some(json!(1)));
        let n = decode(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert_eq!(n.id, None);
        assert_eq!(decode(b"{").unwrap_err().code, PARSE_ERROR);
        assert_eq!(decode(b"[1]").unwrap_err().code, INVALID_REQUEST);
        assert_eq!(
            decode(br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#)
                .unwrap_err()
                .code,
            INVALID_REQUEST
        );
        let e = decode(br#"{"jsonrpc":"2.0","id":7,"method":"x","params":[1]}"#).unwrap_err();
        assert_eq!((e.code, e.id), (INVALID_PARAMS, json!(7)));
        assert_eq!(
            decode(&vec![b' '; MAX_REQUEST_BYTES + 1]).unwrap_err().code,
            INVALID_REQUEST
        );
    }
}
