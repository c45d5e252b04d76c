//! Generates the nri.v1beta1 messages (prost) and gRPC stubs (tonic) from the
//! repository's protos with protox, a protobuf compiler written in Rust: no
//! protoc binary is needed. The well-known types come from prost-types
//! (wrappers become Option<primitive>).

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    // NRI_GRPC_PROTO_DIR overrides the include root (for a vendored copy).
    let root = match std::env::var_os("NRI_GRPC_PROTO_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => manifest.join("../../proto"),
    };
    println!("cargo:rerun-if-env-changed=NRI_GRPC_PROTO_DIR");
    let dir = root.join("nri/v1beta1");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "proto"))
        .collect();
    files.sort();
    println!("cargo:rerun-if-changed={}", dir.display());
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let fds = protox::compile(&files, [&root])?;
    tonic_prost_build::configure().build_server(true).build_client(true).build_transport(false).compile_fds(fds)?;
    Ok(())
}
