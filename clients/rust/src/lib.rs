//! NRI (containerd's Node Resource Interface) over gRPC, for Rust.
//!
//! This crate has two parts:
//!
//! * [`v1beta1`]: the messages and gRPC stubs of `proto/nri/v1beta1/*.proto`
//!   (prost + tonic), generated at build time by `build.rs` with protox (no
//!   `protoc` needed): the clients and servers of `PluginService`,
//!   `RuntimeService`, `AdaptationService` and `AdminService`.
//! * A plugin SDK: implement [`Handler`] for the events you want, build a
//!   [`Plugin`] and `run` it. The SDK serves `PluginService` (and gRPC
//!   health) on a unix socket, holds the registration session with nrid,
//!   checks instance ids, authenticates incoming calls (nrid's uid and root
//!   only), re-registers as soon as nrid is back when it restarts, accumulates
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
}

mod adjust;
mod error;
mod events;
mod handler;
mod plugin;
pub mod rpc;
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
/// The tonic this crate is built with (for `tonic::Status`, `tonic::Code`).
pub use tonic;
pub use v1beta1::{Event, FailurePolicy, ShutdownKind};

/// The version of this SDK, sent in `RegisterPluginRequest.nri_version`
/// (`rust-sdk v1beta1 nri-grpc/VERSION`).
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");
