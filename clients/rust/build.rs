//! Generates the nri.v1beta1 messages (prost) and gRPC stubs (tonic) from the
//! crate's own copy of the protos (`proto/`, copied from the repository's
//! `proto/` by `make rust-proto`; `make check` fails when it is stale) with
//! protox, a protobuf compiler written in Rust: no protoc binary is needed.
//! The well-known types come from prost-types (wrappers become
//! Option<primitive>).
//!
//! It also writes the encoded FileDescriptorSet of nri.v1beta1 and its
//! imports, with source info (the proto comments), to
//! `$OUT_DIR/nri_v1beta1_descriptor_set.bin`: `v1beta1::FILE_DESCRIPTOR_SET`,
//! which the plugin's gRPC reflection serves.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    // NRI_GRPC_PROTO_DIR overrides the include root (for example the
    // repository's proto/ while editing it, before `make rust-proto`).
    let root = match std::env::var_os("NRI_GRPC_PROTO_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => manifest.join("proto"),
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
    let mut compiler = protox::Compiler::new([&root])?;
    compiler.include_source_info(true).include_imports(true).open_files(&files)?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    // Encoded straight from protox's pool: lossless, comments included.
    std::fs::write(out.join("nri_v1beta1_descriptor_set.bin"), compiler.encode_file_descriptor_set())?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .build_transport(false)
        .compile_fds(compiler.file_descriptor_set())?;
    Ok(())
}
