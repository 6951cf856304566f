//! Traces in object storage, against a local S3-compatible server (moto's, from PyPI) that
//! checks signatures: an object streamed (JSON, gzip), an SQLite export, a rank folder, and a
//! missing object, a wrong credential and a truncated object, each answered as a local file
//! would be; credentials from the environment or `~/.aws/credentials`, never printed.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use tracelens_tests::{
    bin_with_tracelens, corpus_dir, fixtures_dir, free_port, repo_root, tracelens, wait_for_port,
};

/// The moto server, killed when dropped, with the bucket `traces` filled and the access key
/// of a user allowed to read it.
struct Server {
    child: Child,
    endpoint: String,
    key_id: String,
    secret: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const SETUP: &str = r#"
import boto3, gzip, json, os, sys
endpoint, corpus, fixtures = sys.argv[1:4]
kw = dict(endpoint_url=endpoint, region_name="us-east-1")
# The first three requests need no signature (INITIAL_NO_AUTH_ACTION_COUNT=3): the user.
iam = boto3.client("iam", aws_access_key_id="setup", aws_secret_access_key="setup", **kw)
iam.create_user(UserName="ci")
iam.put_user_policy(UserName="ci", PolicyName="read", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
key = iam.create_access_key(UserName="ci")["AccessKey"]
s3 = boto3.client("s3", aws_access_key_id=key["AccessKeyId"],
                  aws_secret_access_key=key["SecretAccessKey"], **kw)
s3.create_bucket(Bucket="traces")
one = open(os.path.join(fixtures, "scenarios/dataloader_single_process.json"), "rb").read()
s3.put_object(Bucket="traces", Key="one/dl.json", Body=one)
s3.put_object(Bucket="traces", Key="one/dl.json.gz", Body=gzip.compress(one))
s3.put_object(Bucket="traces", Key="cut/dl.json", Body=one[: len(one) * 2 // 3])
dlrm = os.path.join(corpus, "other/param/dlrm_kineto")
for name in sorted(os.listdir(dlrm)):
    s3.upload_file(os.path.join(dlrm, name), "traces", "dlrm/" + name)
s3.upload_file(os.path.join(corpus, "nsys/public/GindaChen__nsys-ai/tests/fixtures/healthy_1pct.sqlite"),
               "traces", "nsys/healthy_1pct.sqlite")
print(key["AccessKeyId"], key["SecretAccessKey"])
"#;

fn start(python: &str, corpus: &Path, scratch: &Path) -> Server {
    let port = free_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let child = Command::new(python)
        .args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .env("INITIAL_NO_AUTH_ACTION_COUNT", "3")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(scratch.join("moto.log")).unwrap())
        .stderr(std::fs::File::create(scratch.join("moto.err")).unwrap())
        .spawn()
        .unwrap();
    wait_for_port(port, "the moto server");
    let mut server = Server {
        child,
        endpoint,
        key_id: String::new(),
        secret: String::new(),
    };
    let setup = Command::new(python)
        .args(["-c", SETUP, &server.endpoint])
        .arg(corpus)
        .arg(fixtures_dir())
        .output()
        .unwrap();
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let said = String::from_utf8_lossy(&setup.stdout);
    let (id, secret) = said.trim().split_once(' ').unwrap();
    server.key_id = id.to_string();
    server.secret = secret.to_string();
    server
}

/// The CLI as a process, with only the S3 settings given (no AWS variables of the caller).
fn run(
    server: &Server,
    secret: Option<&str>,
    extra_env: &[(&str, &Path)],
    args: &[&str],
) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracelens_for_tests"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AWS_") {
            cmd.env_remove(&k);
        }
    }
    cmd.env("AWS_ENDPOINT_URL", &server.endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        .env("AWS_CONFIG_FILE", "/nonexistent")
        .env("AWS_EC2_METADATA_DISABLED", "true");
    if let Some(secret) = secret {
        cmd.env("AWS_ACCESS_KEY_ID", &server.key_id)
            .env("AWS_SECRET_ACCESS_KEY", secret);
    }
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.args(args).output().unwrap()
}

fn stdout_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A result document without the input's path or file names (the URL versus the local path).
fn without_paths(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("path");
                m.remove("file");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

fn local_json(args: &[&str]) -> Value {
    let mut all = vec!["analyze"];
    all.extend_from_slice(args);
    all.extend(["--format", "json", "--no-report"]);
    let run = tracelens(all);
    assert_eq!(run.code, 0, "{}", run.stderr);
    without_paths(serde_json::from_str(&run.stdout).unwrap())
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("objects-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
#[cfg_attr(
    any(no_corpus, no_moto),
    ignore = "needs the corpus and TRACELENS_MOTO_PYTHON (a Python with moto[server])"
)]
fn traces_in_s3_read_as_local_files_and_failures_say_why() {
    let Some(corpus) = corpus_dir("traces_in_s3_read_as_local_files_and_failures_say_why") else {
        return;
    };
    let Ok(python) = std::env::var("TRACELENS_MOTO_PYTHON") else {
        assert!(
            std::env::var_os("TRACELENS_REQUIRE_MOTO").is_none_or(|v| v != "1"),
            "TRACELENS_REQUIRE_MOTO=1 but no TRACELENS_MOTO_PYTHON"
        );
        return;
    };
    let dir = scratch("s3");
    let server = start(&python, &corpus, &dir);
    let ok = Some(server.secret.as_str());
    fn analyze(url: &str) -> [&str; 5] {
        ["analyze", url, "--format", "json", "--no-report"]
    }
    let fixture = fixtures_dir().join("scenarios/dataloader_single_process.json");
    let local = local_json(&[fixture.to_str().unwrap()]);

    // One object, plain and gzip: streamed, the same answer as the local file.
    let doc = stdout_json(&run(&server, ok, &[], &analyze("s3://traces/one/dl.json")));
    assert!(without_paths(doc) == local, "the object's analysis differs");
    // The gzip object: the same analysis; only the input's description says gzip.
    let mut doc = without_paths(stdout_json(&run(
        &server,
        ok,
        &[],
        &analyze("s3://traces/one/dl.json.gz"),
    )));
    assert_eq!(doc["input"]["compression"], "gzip");
    let mut plain = local.clone();
    for d in [&mut doc, &mut plain] {
        d.as_object_mut().unwrap().remove("input");
    }
    assert!(doc == plain, "the gzip object's analysis differs");
    // An SQLite export (spooled to a temporary file by its importer).
    let sqlite = corpus.join("nsys/public/GindaChen__nsys-ai/tests/fixtures/healthy_1pct.sqlite");
    let doc = stdout_json(&run(
        &server,
        ok,
        &[],
        &analyze("s3://traces/nsys/healthy_1pct.sqlite"),
    ));
    assert!(
        without_paths(doc) == local_json(&[sqlite.to_str().unwrap()]),
        "the SQLite object's analysis differs"
    );
    // A rank folder, with and without the trailing slash: the job of the local folder.
    let dlrm = local_json(&[corpus.join("other/param/dlrm_kineto").to_str().unwrap()]);
    for url in ["s3://traces/dlrm/", "s3://traces/dlrm"] {
        let doc = stdout_json(&run(&server, ok, &[], &analyze(url)));
        assert!(without_paths(doc) == dlrm, "{url}: the job differs");
    }
    // A truncated object is salvaged and said so, as the truncated local file is.
    let cut_local = dir.join("dl.json");
    let bytes = std::fs::read(&fixture).unwrap();
    std::fs::write(&cut_local, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let remote = run(&server, ok, &[], &analyze("s3://traces/cut/dl.json"));
    let remote_doc = stdout_json(&remote);
    assert!(
        without_paths(remote_doc.clone()) == local_json(&[cut_local.to_str().unwrap()]),
        "the truncated object's analysis differs"
    );
    assert!(
        remote_doc.to_string().contains("truncated"),
        "the salvage is said"
    );

    // Credentials from the shared credentials file, none in the environment.
    let creds = dir.join("credentials");
    std::fs::write(
        &creds,
        format!(
            "[other]\naws_access_key_id = nope\n[ci]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            server.key_id, server.secret
        ),
    )
    .unwrap();
    let profile = Path::new("ci");
    let doc = stdout_json(&run(
        &server,
        None,
        &[
            ("AWS_SHARED_CREDENTIALS_FILE", creds.as_path()),
            ("AWS_PROFILE", profile),
        ],
        &analyze("s3://traces/one/dl.json"),
    ));
    assert!(without_paths(doc) == local, "profile credentials");

    // A missing object, a wrong credential: one line naming the URL, exit 2, no secret.
    let missing = run(&server, ok, &[], &analyze("s3://traces/one/nope.json"));
    let said = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(
        said.contains("s3://traces/one/nope.json") && said.contains("no such object"),
        "{said}"
    );
    let wrong = "wrongwrongwrongwrong";
    for url in ["s3://traces/one/dl.json", "s3://traces/dlrm/"] {
        let refused = run(&server, Some(wrong), &[], &analyze(url));
        let said = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{said}");
        assert_eq!(said.trim().lines().count(), 1, "{said}");
        assert!(
            said.contains(url)
                && said.contains("refused")
                && said.contains("SignatureDoesNotMatch"),
            "{said}"
        );
        assert!(
            !said.contains(wrong) && !said.contains(&server.secret),
            "{said}"
        );
        assert!(refused.stdout.is_empty());
    }

    // History over a prefix of stored results: each result document a run; the trace put
    // beside them is skipped.
    let results = dir.join("results");
    std::fs::create_dir_all(&results).unwrap();
    for (i, scenario) in ["dataloader_multi_process_fast", "dataloader_single_process"]
        .iter()
        .enumerate()
    {
        let trace = fixtures_dir().join(format!("scenarios/{scenario}.json"));
        let out = results.join(format!("run{i}.json"));
        let r = tracelens([
            "analyze",
            trace.to_str().unwrap(),
            "--format",
            "json",
            "--label",
            scenario,
            "-o",
            out.to_str().unwrap(),
            "--no-report",
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    std::fs::copy(&fixture, results.join("trace.json")).unwrap();
    let upload = Command::new(&python)
        .args([
            "-c",
            "import boto3, os, sys\ns3 = boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1', aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3])\nfor n in sorted(os.listdir(sys.argv[4])): s3.upload_file(os.path.join(sys.argv[4], n), 'traces', 'results/' + n)",
            &server.endpoint,
            &server.key_id,
            &server.secret,
        ])
        .arg(&results)
        .output()
        .unwrap();
    assert!(
        upload.status.success(),
        "{}",
        String::from_utf8_lossy(&upload.stderr)
    );
    let h = run(
        &server,
        ok,
        &[],
        &["history", "s3://traces/results/", "--format", "json"],
    );
    let h = stdout_json(&h);
    let labels: Vec<&str> = h["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        ["dataloader_multi_process_fast", "dataloader_single_process"]
    );
    assert_eq!(h["changes"].as_array().unwrap().len(), 1, "{h}");

    // The Python API reads the same URL through the binary.
    let bin = bin_with_tracelens(&dir, env!("CARGO_BIN_EXE_tracelens_for_tests"));
    let py = Command::new(&python)
        .args([
            "-c",
            "import tracelens, sys; d = tracelens.analyze(sys.argv[1]); print(d['diagnosis']['verdict']['kind'])",
            "s3://traces/one/dl.json",
        ])
        .env("PYTHONPATH", repo_root().join("python/src"))
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()),
        )
        .env("AWS_ENDPOINT_URL", &server.endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", &server.key_id)
        .env("AWS_SECRET_ACCESS_KEY", &server.secret)
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&py.stdout).trim(),
        local["diagnosis"]["verdict"]["kind"].as_str().unwrap()
    );
    drop(server);
    std::fs::remove_dir_all(dir).unwrap();
}

/// The well-known key of the Azure storage emulator's account (public, in Microsoft's docs).
const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const AZURE_SETUP: &str = r#"
import os, sys
from azure.storage.blob import BlobServiceClient
endpoint, key, corpus, fixtures = sys.argv[1:5]
svc = BlobServiceClient.from_connection_string(
    f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={key};BlobEndpoint={endpoint}/devstoreaccount1;")
c = svc.create_container("traces")
with open(os.path.join(fixtures, "scenarios/dataloader_single_process.json"), "rb") as f:
    c.upload_blob("one/dl.json", f)
dlrm = os.path.join(corpus, "other/param/dlrm_kineto")
for name in sorted(os.listdir(dlrm)):
    with open(os.path.join(dlrm, name), "rb") as f:
        c.upload_blob("dlrm/" + name, f)
"#;

#[test]
#[cfg_attr(
    any(no_corpus, no_moto, no_azurite),
    ignore = "needs the corpus, TRACELENS_AZURITE (azurite-blob) and TRACELENS_MOTO_PYTHON with azure-storage-blob"
)]
fn traces_in_azure_blob_storage_read_as_local_files() {
    let Some(corpus) = corpus_dir("traces_in_azure_blob_storage_read_as_local_files") else {
        return;
    };
    let (Ok(azurite), Ok(python)) = (
        std::env::var("TRACELENS_AZURITE"),
        std::env::var("TRACELENS_MOTO_PYTHON"),
    ) else {
        assert!(
            std::env::var_os("TRACELENS_REQUIRE_AZURITE").is_none_or(|v| v != "1"),
            "TRACELENS_REQUIRE_AZURITE=1 but no TRACELENS_AZURITE or TRACELENS_MOTO_PYTHON"
        );
        return;
    };
    let dir = scratch("azure");
    let port = free_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let mut child = Command::new(&azurite)
        .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
        .arg("--location")
        .arg(dir.join("data"))
        .args(["--skipApiVersionCheck", "--silent"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("azurite.err")).unwrap())
        .spawn()
        .unwrap();
    wait_for_port(port, "azurite");
    let setup = Command::new(&python)
        .args(["-c", AZURE_SETUP, &endpoint, AZURITE_KEY])
        .arg(&corpus)
        .arg(fixtures_dir())
        .output()
        .unwrap();
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let az = |key: &str, args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracelens_for_tests"));
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("AZURE") {
                cmd.env_remove(&k);
            }
        }
        cmd.env("AZURE_STORAGE_USE_EMULATOR", "true")
            .env("AZURITE_BLOB_STORAGE_URL", &endpoint)
            .env("AZURE_STORAGE_ACCOUNT_NAME", "devstoreaccount1")
            .env("AZURE_STORAGE_ACCOUNT_KEY", key)
            .args(args)
            .output()
            .unwrap()
    };
    let fixture = fixtures_dir().join("scenarios/dataloader_single_process.json");
    let doc = stdout_json(&az(
        AZURITE_KEY,
        &[
            "analyze",
            "az://traces/one/dl.json",
            "--format",
            "json",
            "--no-report",
        ],
    ));
    assert!(
        without_paths(doc) == local_json(&[fixture.to_str().unwrap()]),
        "the blob's analysis differs"
    );
    let dlrm = local_json(&[corpus.join("other/param/dlrm_kineto").to_str().unwrap()]);
    let doc = stdout_json(&az(
        AZURITE_KEY,
        &[
            "analyze",
            "az://traces/dlrm/",
            "--format",
            "json",
            "--no-report",
        ],
    ));
    assert!(without_paths(doc) == dlrm, "the blob folder's job differs");
    let missing = az(AZURITE_KEY, &["analyze", "az://traces/one/nope.json"]);
    let said = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{said}");
    assert!(said.contains("no such object"), "{said}");
    // Another account key: refused, and neither key is printed.
    let wrong = format!("AAAA{}", &AZURITE_KEY[4..]);
    let refused = az(&wrong, &["analyze", "az://traces/one/dl.json"]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(said.contains("refused"), "{said}");
    assert!(
        !said.contains(&wrong) && !said.contains(AZURITE_KEY),
        "{said}"
    );
    let _ = child.kill();
    let _ = child.wait();
    std::fs::remove_dir_all(dir).unwrap();
}
