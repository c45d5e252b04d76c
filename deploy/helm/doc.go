// Package helm holds the tests of the Helm charts in this directory,
// nri-grpc (nrid's DaemonSet) and nri-grpc-plugin (one plugin's
// DaemonSet): each chart is rendered with `helm template` and the objects
// are checked against what nrid and the plugin SDK expect (nrid.toml parses
// and compiles with package config, the plugin's environment is the
// SDK's). The tests need the helm binary in $HELM (`make chart-check` sets
// it) and skip without it. See deploy/README.md.
package helm
