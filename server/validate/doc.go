// Package validate is nrid's built-in default validator and the home of the
// required-plugins policy.
//
// The [Validator] re-implements classic NRI's default validator
// (plugins/default-validator in github.com/containerd/nri v0.12.5) over the
// v1beta1 types. It is a pure function of a
// [nriv1beta1.ValidateContainerAdjustmentRequest]: no I/O, no logging, no
// clock. It runs the classic checks in the classic order and stops at the
// first failure:
//
//  1. OCI hooks: any owner of FIELD_OCI_HOOKS, if
//     [Config.RejectOCIHookAdjustment].
//  2. Seccomp: an owner of FIELD_SECCOMP_POLICY, with the knob chosen by the
//     container's linux.seccomp_profile (absent or UNCONFINED: unconfined;
//     RUNTIME_DEFAULT: runtime default; LOCALHOST: custom).
//  3. Namespaces: any owner of FIELD_NAMESPACE, removals included, if
//     [Config.RejectNamespaceAdjustment].
//  4. Required plugins: see [Validator.Required] and [MissingRequired].
//  5. Sysctl: any key of adjust.linux.sysctl that has an owner, if
//     [Config.RejectSysctlAdjustment].
//
// Every rejection wraps [ErrValidation], and its text is classic's, including
// classic's double space in two of the seccomp messages.
//
// # Changes from classic NRI
//
// One deliberate change (nri-grpc DESIGN §5.3): the tolerate-missing-plugins
// annotation waives only plugins that the required-plugins annotation asked
// for. It never waives the operator's [Config.RequiredPlugins]; in classic NRI
// it waived both.
//
// Smaller differences, none of which changes a decision:
//   - Namespace and sysctl offenders are listed in a stable order (sorted by
//     namespace type, by sysctl key); classic lists them in Go map order.
//   - An invalid annotation value is reported with classic's text, and the
//     error also wraps [ErrValidation] (classic's did not).
//   - Requests with missing parts (nil owners, nil container) never panic.
package validate
