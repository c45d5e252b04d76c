//! Handler errors and their gRPC status.

use std::error::Error as StdError;

use tonic::{Code, Status};

/// The result of an event handler.
pub type HandlerResult<T> = Result<T, HandlerError>;

/// The error of an event handler: the gRPC status nrid receives.
///
/// On a creating event (RunPodSandbox, UpdatePodSandbox, CreateContainer,
/// StartContainer, UpdateContainer) an error is a verdict: it **vetoes** the
/// operation, and nrid passes the code and message (prefixed with the
/// plugin's name) to the runtime. On notification and teardown events it is
/// only recorded. A validator's error is a rejection whose reason is the
/// message.
///
/// Any error converts into a `HandlerError`, so `?` works in handlers:
///
/// * a [`tonic::Status`] (also found in an error's source chain) keeps its
///   code;
/// * [`tokio::time::error::Elapsed`] becomes `DEADLINE_EXCEEDED`, which
///   nrid treats as "not available" (handled under the failure policy), not
///   as a veto;
/// * anything else (including `&str` and `String`) becomes
///   `FAILED_PRECONDITION` with the error's text.
///
/// Do not return `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED` or
/// `CANCELLED` to say "no": those mean "I could not answer". Use
/// [`HandlerError::veto`] or [`HandlerError::invalid`].
///
/// `HandlerError` does not implement `std::error::Error`, so that every
/// error type can convert into it (as with `anyhow::Error`).
pub struct HandlerError {
    status: Status,
}

impl HandlerError {
    /// An error with `code` and `message`.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        HandlerError { status: Status::new(code, message) }
    }

    /// A veto: `FAILED_PRECONDITION` ("no GPU left on this node").
    pub fn veto(message: impl Into<String>) -> Self {
        Self::new(Code::FailedPrecondition, message)
    }

    /// A veto for a malformed input: `INVALID_ARGUMENT` ("annotation foo:
    /// not a number").
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Code::InvalidArgument, message)
    }

    /// The status nrid gets.
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The status nrid gets.
    pub fn into_status(self) -> Status {
        self.status
    }
}

impl<E: Into<Box<dyn StdError + Send + Sync + 'static>>> From<E> for HandlerError {
    fn from(err: E) -> Self {
        let err: Box<dyn StdError + Send + Sync> = err.into();
        let err = match err.downcast::<Status>() {
            Ok(st) => return HandlerError { status: *st },
            Err(err) => err,
        };
        let err = match err.downcast::<tokio::time::error::Elapsed>() {
            Ok(e) => return HandlerError::new(Code::DeadlineExceeded, e.to_string()),
            Err(err) => err,
        };
        let text = err.to_string();
        match Status::try_from_error(err) {
            // A status found in the source chain: its code, the outer text.
            Ok(st) => HandlerError::new(st.code(), text),
            Err(_) => HandlerError::new(Code::FailedPrecondition, text),
        }
    }
}

impl std::fmt::Debug for HandlerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HandlerError({:?}: {})", self.status.code(), self.status.message())
    }
}

impl std::fmt::Display for HandlerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status.code(), self.status.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapped(Status);
    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "wrapped: {}", self.0.message())
        }
    }
    impl StdError for Wrapped {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn conversions() {
        let e: HandlerError = "no GPU left".into();
        assert_eq!(e.status().code(), Code::FailedPrecondition);
        assert_eq!(e.status().message(), "no GPU left");
        let e: HandlerError = Status::invalid_argument("bad").into();
        assert_eq!((e.status().code(), e.status().message()), (Code::InvalidArgument, "bad"));
        let e: HandlerError = Wrapped(Status::permission_denied("inner")).into();
        assert_eq!((e.status().code(), e.status().message()), (Code::PermissionDenied, "wrapped: inner"));
        let io = std::io::Error::other("disk on fire");
        let e: HandlerError = io.into();
        assert_eq!(e.status().code(), Code::FailedPrecondition);
        fn parse(s: &str) -> HandlerResult<u32> {
            Ok(s.parse::<u32>()?)
        }
        assert_eq!(parse("x").unwrap_err().status().code(), Code::FailedPrecondition);
        assert_eq!(HandlerError::veto("v").status().code(), Code::FailedPrecondition);
        assert_eq!(HandlerError::invalid("v").status().code(), Code::InvalidArgument);
    }

    #[tokio::test]
    async fn elapsed() {
        let r = tokio::time::timeout(std::time::Duration::from_millis(1), std::future::pending::<()>()).await;
        let e: HandlerError = r.unwrap_err().into();
        assert_eq!(e.status().code(), Code::DeadlineExceeded);
    }
}
