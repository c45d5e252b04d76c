//! NRI (containerd's Node Resource Interface) over gRPC, for Rust.
//!
//! This crate has two parts:
//!
//! * [`v1beta1`]: the messages and gRPC stubs of `proto/nri/v1beta1/*.proto`
//!   (prost + tonic; the crate ships its copy of the protos), generated at
//!   build time by `build.rs` with protox (no `protoc` needed): the clients
//!   and servers of `PluginService`, `RuntimeService`, `AdaptationService`
//!   and `AdminService`.
//! * A plugin SDK: implement [`Handler`] for the events you want, build a
//!   [`Plugin`] and `run` it. The SDK serves `PluginService` (and gRPC health
//!   and reflection) on a unix socket, holds the registration session with
//!   nrid, checks instance ids, authenticates incoming calls (nrid's uid and
//!   root only), re-registers as soon as nrid is back when it restarts, accumulates
//!   Synchronize pages, and handles resync and Shutdown (including
//!   `SHUTDOWN_KIND_REPLACED`). [`Adjustment`] and [`Update`] build responses
//!   with the classic removal-marker conventions.
//!
//! ```no_run
//! use nri_grpc::v1beta1::{CreateContainerRequest, CreateContainerResponse};
//! use nri_grpc::{Adjustment, Context, Event, EventMask, Handler, HandlerResult, Plugin};
//!
//! struct Hello;
//!
//! impl Handler for Hello {
//!     fn events(&self) -> EventMask {
//!         EventMask::of(&[Event::CreateContainer])
//!     }
//!     async fn create_container(&self, _ctx: Context, req: CreateContainerRequest)
//!         -> HandlerResult<CreateContainerResponse> {
//!         let name = req.container.map(|c| c.name).unwrap_or_default();
//!         Ok(Adjustment::new().add_env("HELLO", name).response())
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), nri_grpc::Error> {
//!     let plugin = Plugin::builder(Hello).name("hello").index("10").build()?;
//!     plugin.run_until_signal().await?; // until SIGTERM or SIGINT
//!     Ok(())
//! }
//! ```
//!
//! The wire contract is `docs/PROTOCOL.md` in the repository; the tutorial is
//! `docs/rust-plugin.md`.

#![warn(missing_docs)]

/// The generated `nri.v1beta1` messages, enums and gRPC clients/servers.
#[allow(missing_docs, clippy::all, clippy::pedantic, rustdoc::all)]
pub mod v1beta1 {
    tonic::include_proto!("nri.v1beta1");

    /// The encoded `FileDescriptorSet` of `nri.v1beta1` and its imports
    /// (`google/protobuf/*`), with source info: the proto comments. The
    /// plugin's gRPC reflection serves it (`grpcurl describe`); pass it to
    /// `tonic_reflection` or `prost_reflect` for a server of your own.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/nri_v1beta1_descriptor_set.bin"));
}

mod adjust;
mod error;
mod events;
mod handler;
mod plugin;
pub mod rpc;
mod selector;
mod service;
#[cfg(feature = "testing")]
pub mod testing;

pub use adjust::{Adjustment, Update, effective_annotation, evict, is_marked_for_removal, mark_for_removal};
pub use error::{HandlerError, HandlerResult};
pub use events::{EventMask, event_name};
pub use handler::{Context, Handler};
pub use plugin::{
    DEFAULT_SERVER_ADDRESS, DEFAULT_SOCKET_DIR, ENV_PLUGIN_ENDPOINT, ENV_PLUGIN_IDX, ENV_PLUGIN_NAME,
    ENV_SERVER_ADDRESS, Error, Exit, METADATA_INSTANCE_ID, Plugin, PluginBuilder, PluginHandle, check_index,
    check_name, parse_plugin_file_name,
};
pub use selector::{
    MAX_POD_LABELS_BYTES, MAX_REASON_BYTES, MAX_SELECTOR_ENTRIES, MAX_SELECTOR_ENTRY_BYTES, MAX_SELECTORS,
    check_selectors,
};
/// The tonic this crate is built with (for `tonic::Status`, `tonic::Code`).
pub use tonic;
pub use v1beta1::{Event, EventSelector, FailurePolicy, PluginStatus, ShutdownKind, SyncReason};

/// The version of this SDK: the crate's version (Cargo's
/// `CARGO_PKG_VERSION`), sent with [`PROTOCOL`] in
/// `RegisterPluginRequest.nri_version` (`rust-sdk v1beta1 nri-grpc/VERSION`,
/// see [`NRI_VERSION`]). The version policy is in the crate's README.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The NRI protocol this SDK speaks: the version of the `nri.v1beta1`
/// package its code is generated from.
pub const PROTOCOL: &str = "v1beta1";

/// What the SDK sends in `RegisterPluginRequest.nri_version`: SDK, protocol
/// and SDK version (`rust-sdk v1beta1 nri-grpc/0.1.0`), as nrid and
/// `nrictl plugins -wide` show it.
pub const NRI_VERSION: &str = concat!("rust-sdk v1beta1 nri-grpc/", env!("CARGO_PKG_VERSION"));

#[cfg(test)]
mod tests {
    use prost::Message;

    /// The version string is made of the SDK's parts, and PROTOCOL is the
    /// package the code is generated from (the descriptor set's nri files).
    #[test]
    fn version_names_the_protocol_of_the_generated_code() {
        assert_eq!(super::NRI_VERSION, format!("rust-sdk {} nri-grpc/{}", super::PROTOCOL, super::SDK_VERSION));
        assert_eq!(super::SDK_VERSION, env!("CARGO_PKG_VERSION"));
        let set = prost_types::FileDescriptorSet::decode(super::v1beta1::FILE_DESCRIPTOR_SET).unwrap();
        let nri: Vec<_> = set.file.iter().filter(|f| f.name().starts_with("nri/")).collect();
        let names: Vec<_> = set.file.iter().map(|f| f.name()).collect();
        assert!(names.contains(&"nri/v1beta1/plugin_service.proto"), "{names:?}");
        for f in nri {
            assert_eq!(f.package(), format!("nri.{}", super::PROTOCOL), "{}", f.name());
            assert!(f.source_code_info.is_some(), "{} has no source info (comments)", f.name());
        }
    }
}
