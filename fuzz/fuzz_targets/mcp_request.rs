//! Any bytes as one MCP request line: decoding never panics, a decoded request has a method
//! and object params, and every refusal is a JSON-RPC error whose response line is JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracelens_cli::mcp::protocol::{decode, error_line, result_line};

fuzz_target!(|data: &[u8]| {
    match decode(data) {
        Ok(request) => {
            assert!(request.params.is_object());
            if let Some(id) = &request.id {
                let line = result_line(id, serde_json::Value::Null);
                assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok());
            }
        }
        Err(e) => {
            assert!((-32768..=-32000).contains(&e.code));
            let line = error_line(&e);
            assert!(!line.contains('\n'));
            assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok());
        }
    }
});
