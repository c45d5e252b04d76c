//! The `google.rpc` error details nrid attaches to its error statuses
//! (docs/PROTOCOL.md §11, §12): `ErrorInfo` (domain `nri.v1beta1`, reason a
//! `RegistrationRefusal` or `DispatchOutcome` value name, metadata `field` or
//! `plugins`) and `BadRequest`. Hand-written prost messages, wire-identical to
//! `google/rpc/status.proto` and `error_details.proto`.

use std::collections::HashMap;

use prost::Message;

/// The `google.rpc.ErrorInfo` domain of nri-grpc's errors.
pub const ERROR_DOMAIN: &str = "nri.v1beta1";

/// `google.rpc.Status`: the content of the `grpc-status-details-bin`
/// trailer.
#[derive(Clone, PartialEq, Message)]
pub struct RpcStatus {
    /// The status code.
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// The message.
    #[prost(string, tag = "2")]
    pub message: String,
    /// The details.
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<prost_types::Any>,
}

/// `google.rpc.ErrorInfo`.
#[derive(Clone, PartialEq, Message)]
pub struct ErrorInfo {
    /// The reason, for example `DISPATCH_OUTCOME_VETOED`.
    #[prost(string, tag = "1")]
    pub reason: String,
    /// The domain, `nri.v1beta1` for nrid's errors.
    #[prost(string, tag = "2")]
    pub domain: String,
    /// Metadata: `plugins` (dispatch errors), `field` (refusals).
    #[prost(map = "string, string", tag = "3")]
    pub metadata: HashMap<String, String>,
}

/// `google.rpc.BadRequest`.
#[derive(Clone, PartialEq, Message)]
pub struct BadRequest {
    /// One violation per invalid field.
    #[prost(message, repeated, tag = "1")]
    pub field_violations: Vec<FieldViolation>,
}

/// `google.rpc.BadRequest.FieldViolation`.
#[derive(Clone, PartialEq, Message)]
pub struct FieldViolation {
    /// The field, for example `plugin_idx`.
    #[prost(string, tag = "1")]
    pub field: String,
    /// What is wrong with it.
    #[prost(string, tag = "2")]
    pub description: String,
}

/// The decoded details of `status` (empty when it has none).
pub fn details(status: &tonic::Status) -> Option<RpcStatus> {
    if status.details().is_empty() {
        return None;
    }
    RpcStatus::decode(status.details()).ok()
}

/// The `ErrorInfo` of nrid (domain `nri.v1beta1`) in `status`, if any.
pub fn error_info(status: &tonic::Status) -> Option<ErrorInfo> {
    details(status)?
        .details
        .iter()
        .filter(|a| a.type_url.ends_with("/google.rpc.ErrorInfo"))
        .filter_map(|a| ErrorInfo::decode(a.value.as_slice()).ok())
        .find(|i| i.domain == ERROR_DOMAIN)
}

/// The `ErrorInfo.reason` of nrid in `status`, or "" without one.
pub fn reason(status: &tonic::Status) -> String {
    error_info(status).map(|i| i.reason).unwrap_or_default()
}

/// The plugins an nrid dispatch error names (`ErrorInfo.metadata["plugins"]`).
pub fn plugins(status: &tonic::Status) -> Vec<String> {
    error_info(status)
        .and_then(|i| i.metadata.get("plugins").cloned())
        .map(|p| p.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The `BadRequest` field violations in `status`.
pub fn field_violations(status: &tonic::Status) -> Vec<FieldViolation> {
    let Some(d) = details(status) else { return vec![] };
    d.details
        .iter()
        .filter(|a| a.type_url.ends_with("/google.rpc.BadRequest"))
        .filter_map(|a| BadRequest::decode(a.value.as_slice()).ok())
        .flat_map(|b| b.field_violations)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let info = ErrorInfo {
            reason: "DISPATCH_OUTCOME_VETOED".into(),
            domain: ERROR_DOMAIN.into(),
            metadata: HashMap::from([("plugins".to_owned(), "10-a,20-b".to_owned())]),
        };
        let st = RpcStatus {
            code: 9,
            message: "vetoed".into(),
            details: vec![prost_types::Any {
                type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
                value: info.encode_to_vec(),
            }],
        };
        let status = tonic::Status::with_details(tonic::Code::FailedPrecondition, "vetoed", st.encode_to_vec().into());
        assert_eq!(reason(&status), "DISPATCH_OUTCOME_VETOED");
        assert_eq!(plugins(&status), ["10-a", "20-b"]);
        assert!(field_violations(&status).is_empty());
        assert_eq!(reason(&tonic::Status::unavailable("x")), "");
    }
}
