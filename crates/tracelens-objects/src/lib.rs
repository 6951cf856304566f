//! Traces in object storage: an `s3://`, `gs://` or `az://` URL names one object (a trace) or
//! a prefix (a folder of traces), read through the `object_store` crate. A trace is streamed
//! as it downloads ([`open`] hands a blocking [`Read`] to the importers, so Kineto JSON and
//! gzip never touch the disk; the SQLite importer spools what it is given to a temporary file
//! itself). Credentials come from the usual environment variables of each service
//! (`AWS_ACCESS_KEY_ID`, `GOOGLE_APPLICATION_CREDENTIALS`, `AZURE_STORAGE_ACCOUNT_KEY`, …) and,
//! for S3, the profile of `~/.aws/credentials` and `~/.aws/config`; a credential is never part
//! of a message ([`redact`]), and a URL that carries one is refused.
#![deny(missing_docs)]

mod profile;

use futures_util::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, RetryConfig};
use std::collections::HashMap;
use std::io::{self, ErrorKind, Read};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

/// The storage service a URL names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Service {
    /// Amazon S3 and S3-compatible servers (`s3://BUCKET/KEY`; `AWS_ENDPOINT_URL` for others).
    S3,
    /// Google Cloud Storage (`gs://BUCKET/KEY`).
    Gcs,
    /// Azure Blob Storage (`az://CONTAINER/KEY`, the account from `AZURE_STORAGE_ACCOUNT_NAME`).
    Azure,
}

const SCHEMES: [(&str, Service); 5] = [
    ("s3://", Service::S3),
    ("s3a://", Service::S3),
    ("gs://", Service::Gcs),
    ("az://", Service::Azure),
    ("azure://", Service::Azure),
];

/// Whether `text` is an object-storage URL (whatever its validity): a path of the local file
/// system never starts with a scheme and `://`.
#[must_use]
pub fn is_object_url(text: &str) -> bool {
    service_of(text).is_some()
}

/// The service whose scheme `text` starts with (any letter case).
fn service_of(text: &str) -> Option<Service> {
    SCHEMES
        .iter()
        .find(|(prefix, _)| {
            text.get(..prefix.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
        })
        .map(|(_, s)| *s)
}

/// What a URL names: the service, the bucket (or container) and the key in it.
#[derive(Clone, Debug)]
struct Location {
    service: Service,
    bucket: String,
    key: ObjectPath,
}

impl Location {
    fn parse(text: &str) -> io::Result<Location> {
        let invalid = |why: String| io::Error::new(ErrorKind::InvalidInput, why);
        let service =
            service_of(text).ok_or_else(|| invalid("not an s3://, gs:// or az:// URL".into()))?;
        let url = url::Url::parse(text).map_err(|e| invalid(format!("not a valid URL: {e}")))?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid(
                "the URL holds a user name or password: give credentials in the environment or the service's config files, never in the URL".into(),
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(invalid(
                "the URL has a query or fragment: name the bucket and key only".into(),
            ));
        }
        let bucket = url
            .host_str()
            .filter(|b| !b.is_empty())
            .ok_or_else(|| invalid("the URL names no bucket".into()))?
            .to_string();
        let key = ObjectPath::from_url_path(url.path())
            .map_err(|e| invalid(format!("not a valid object key: {e}")))?;
        Ok(Location {
            service,
            bucket,
            key,
        })
    }

    /// The URL of `key` in this location's bucket.
    fn url_of(&self, key: &ObjectPath) -> String {
        let scheme = match self.service {
            Service::S3 => "s3",
            Service::Gcs => "gs",
            Service::Azure => "az",
        };
        format!("{scheme}://{}/{key}", self.bucket)
    }
}

/// One object of a listed prefix.
#[derive(Clone, Debug)]
pub struct Listed {
    /// Its URL (`s3://bucket/run/rank0.json`).
    pub url: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was last written.
    pub modified: SystemTime,
}

/// The runtime the object stores run on: two threads, started on first use.
fn runtime() -> io::Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("tracelens-objects")
                .enable_all()
                .build()
                .ok()
        })
        .as_ref()
        .ok_or_else(|| io::Error::other("cannot start the object-storage runtime"))
}

/// The store of one bucket, built once per run from the environment (and config files).
fn store(at: &Location) -> io::Result<Arc<dyn ObjectStore>> {
    type Stores = Mutex<HashMap<(Service, String), Arc<dyn ObjectStore>>>;
    static STORES: OnceLock<Stores> = OnceLock::new();
    let stores = STORES.get_or_init(Stores::default);
    let key = (at.service, at.bucket.clone());
    if let Some(s) = stores.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(s);
    }
    // A connection that cannot be made fails within seconds; a transfer may take as long as
    // a multi-GB trace needs. Three retries of a failed request, within a minute. Plain http
    // is allowed where the user's configuration names an http endpoint (a local S3-compatible
    // server, an emulator); the services' own endpoints stay https.
    let client = ClientOptions::new()
        .with_connect_timeout(Duration::from_secs(10))
        .with_timeout_disabled()
        .with_allow_http(true);
    let retry = RetryConfig {
        max_retries: 3,
        retry_timeout: Duration::from_secs(60),
        ..RetryConfig::default()
    };
    let built: object_store::Result<Arc<dyn ObjectStore>> = match at.service {
        Service::S3 => {
            let mut b = object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(&at.bucket)
                .with_client_options(client)
                .with_retry(retry);
            for (name, value) in profile::aws_profile() {
                let name = match name.as_str() {
                    "region" => "aws_region".to_string(),
                    "endpoint_url" => "aws_endpoint_url".to_string(),
                    _ => name,
                };
                if let Ok(k) = name.parse::<object_store::aws::AmazonS3ConfigKey>() {
                    if b.get_config_value(&k).is_none() {
                        b = b.with_config(k, value);
                    }
                }
            }
            b.build().map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
        }
        Service::Gcs => object_store::gcp::GoogleCloudStorageBuilder::from_env()
            .with_bucket_name(&at.bucket)
            .with_client_options(client)
            .with_retry(retry)
            .build()
            .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
        Service::Azure => object_store::azure::MicrosoftAzureBuilder::from_env()
            .with_container_name(&at.bucket)
            .with_client_options(client)
            .with_retry(retry)
            .build()
            .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
    };
    let built = built.map_err(|e| problem(&e))?;
    if let Ok(mut m) = stores.lock() {
        m.insert(key, built.clone());
    }
    Ok(built)
}

/// Opens the object at `url` for reading as it downloads; returns the reader and the
/// object's size. The reader fails (never ends quietly) when the transfer stops early.
///
/// # Errors
/// A URL that is not valid, a missing object, refused credentials, an unreachable service.
pub fn open(url: &str) -> io::Result<(Box<dyn Read + Send>, u64)> {
    let at = Location::parse(url)?;
    let store = store(&at)?;
    let rt = runtime()?;
    let got = rt.block_on(store.get(&at.key)).map_err(|e| problem(&e))?;
    let size = got.meta.size;
    let (send, receive) = tokio::sync::mpsc::channel::<io::Result<bytes::Bytes>>(16);
    rt.spawn(async move {
        let mut stream = got.into_stream();
        let mut received = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| problem(&e));
            if let Ok(c) = &chunk {
                received += c.len() as u64;
            }
            let failed = chunk.is_err();
            if send.send(chunk).await.is_err() || failed {
                return;
            }
        }
        if received < size {
            let _ = send
                .send(Err(io::Error::new(
                    ErrorKind::UnexpectedEof,
                    format!("the download stopped after {received} of the object's {size} bytes"),
                )))
                .await;
        }
    });
    Ok((
        Box::new(ObjectReader {
            receive,
            chunk: bytes::Bytes::new(),
        }),
        size,
    ))
}

/// The bytes of an object as they arrive.
struct ObjectReader {
    receive: tokio::sync::mpsc::Receiver<io::Result<bytes::Bytes>>,
    chunk: bytes::Bytes,
}

impl Read for ObjectReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.chunk.is_empty() {
            match self.receive.blocking_recv() {
                Some(Ok(c)) => self.chunk = c,
                Some(Err(e)) => return Err(e),
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.chunk.len());
        out[..n].copy_from_slice(&self.chunk[..n]);
        self.chunk = self.chunk.slice(n..);
        Ok(n)
    }
}

/// What `url` names: `Ok(Some(objects))` for a prefix (a URL ending in `/`, or one that names
/// no object but has objects under it), the objects directly under it; `Ok(None)` for an
/// object.
///
/// # Errors
/// A URL that is not valid, refused credentials, an unreachable service, or a URL that names
/// neither an object nor a prefix holding any.
pub fn folder(url: &str) -> io::Result<Option<Vec<Listed>>> {
    let at = Location::parse(url)?;
    let store = store(&at)?;
    let rt = runtime()?;
    if !url.ends_with('/') {
        match rt.block_on(store.head(&at.key)) {
            Ok(_) => return Ok(None),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(problem(&e)),
        }
    }
    let prefix = (!at.key.as_ref().is_empty()).then_some(&at.key);
    let listed = rt
        .block_on(store.list_with_delimiter(prefix))
        .map_err(|e| problem(&e))?;
    if listed.objects.is_empty() && listed.common_prefixes.is_empty() {
        return Err(io::Error::new(
            ErrorKind::NotFound,
            "no such object, and no objects under it as a prefix",
        ));
    }
    let mut objects: Vec<Listed> = listed
        .objects
        .into_iter()
        .map(|o| Listed {
            url: at.url_of(&o.location),
            size: o.size,
            modified: SystemTime::from(o.last_modified),
        })
        .collect();
    objects.sort_by(|a, b| a.url.cmp(&b.url));
    Ok(Some(objects))
}

/// An object_store error as one line without secrets: what happened, not the request.
fn problem(e: &object_store::Error) -> io::Error {
    let text = e.to_string();
    let code = xml_code(&text);
    let (kind, said) = match e {
        object_store::Error::NotFound { .. } => (ErrorKind::NotFound, "no such object".into()),
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => (
            ErrorKind::PermissionDenied,
            format!(
                "the storage service refused the request{}: check the credentials (environment variables, or the service's config files) and the bucket's permissions",
                code.map(|c| format!(" ({c})")).unwrap_or_default()
            ),
        ),
        _ => (
            ErrorKind::Other,
            match code {
                Some(c) => format!("the storage service answered {c}"),
                None => first_words(&text, 240),
            },
        ),
    };
    io::Error::new(kind, redact(&said))
}

/// The `<Code>…</Code>` of an S3/Azure XML error body in `text`, if any (letters only).
fn xml_code(text: &str) -> Option<&str> {
    let start = text.find("<Code>")? + "<Code>".len();
    let len = text[start..].find("</Code>")?;
    let code = &text[start..start + len];
    (!code.is_empty() && code.len() <= 64 && code.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then_some(code)
}

/// At most `max` characters of `text`'s first line.
fn first_words(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// `text` without credentials: the user info (`user:password@`) and query strings
/// (signatures, SAS tokens) of URLs cut, and the value of every secret in the environment or
/// the AWS profile replaced by `***`.
#[must_use]
pub fn redact(text: &str) -> String {
    let mut out: String = text
        .split(' ')
        .map(url_without_credentials)
        .collect::<Vec<_>>()
        .join(" ");
    for secret in secrets() {
        if out.contains(&secret) {
            out = out.replace(&secret, "***");
        }
    }
    out
}

/// A word of a message with any URL in it printed without its user info and query.
fn url_without_credentials(word: &str) -> String {
    let Some(scheme) = word.find("://") else {
        return word.to_string();
    };
    let host_at = scheme + 3;
    let (head, rest) = word.split_at(host_at);
    // The authority ends at the path, query or fragment.
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let rest = match rest[..authority_end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    match rest.find('?') {
        Some(query) => format!("{head}{}?…", &rest[..query]),
        None => format!("{head}{rest}"),
    }
}

/// Values that must never be printed: every environment variable whose name says secret,
/// token, key, password or signature, and the AWS profile's keys and tokens (8+ characters).
fn secrets() -> Vec<String> {
    let secretive = |name: &str| {
        let n = name.to_ascii_uppercase();
        ["SECRET", "TOKEN", "KEY", "PASSWORD", "SAS", "SIGNATURE"]
            .iter()
            .any(|w| n.contains(w))
    };
    let mut values: Vec<String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| secretive(k))
        .map(|(_, v)| v)
        .chain(
            profile::aws_profile()
                .into_iter()
                .filter(|(k, _)| secretive(k))
                .map(|(_, v)| v),
        )
        .filter(|v| v.len() >= 8)
        .collect();
    // Longest first, so a secret that contains another is replaced whole.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths_and_credentials_in_them_refused() {
        assert!(is_object_url("s3://bucket/run/"));
        assert!(is_object_url("GS://b/x.json"));
        assert!(!is_object_url("./s3://x"));
        assert!(!is_object_url("é"));
        let at = Location::parse("s3://bucket/run/rank%200.json").unwrap();
        assert_eq!(at.bucket, "bucket");
        assert_eq!(at.key.as_ref(), "run/rank 0.json");
        for bad in [
            "s3://user:pass@bucket/x",
            "s3://bucket/x?X-Amz-Signature=abc",
            "s3:///x",
        ] {
            assert!(Location::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn messages_lose_query_strings_and_known_secrets() {
        let said = redact("GET https://acct.blob.core.windows.net/c/x?sig=SECRETSIG&se=1 failed");
        assert_eq!(said, "GET https://acct.blob.core.windows.net/c/x?… failed");
        // An endpoint with a password in it (AWS_ENDPOINT_URL, AZURE_ENDPOINT) loses it.
        let said = redact("connect (http://minio:hunter2secret@10.0.0.5:9000/b?x=1) refused");
        assert_eq!(said, "connect (http://10.0.0.5:9000/b?… refused");
        assert_eq!(redact("http://u@h"), "http://h");
        // Not a URL: an @ in a word stays.
        assert_eq!(redact("rank@0 failed"), "rank@0 failed");
        assert_eq!(
            xml_code("403: <Error><Code>SignatureDoesNotMatch</Code></Error>"),
            Some("SignatureDoesNotMatch")
        );
        assert_eq!(xml_code("<Code>a b</Code>"), None);
    }
}
