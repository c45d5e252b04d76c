package config

import (
	"errors"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nri-grpc/nri-grpc/server/validate"
)

const samplePath = "../deploy/nrid.toml"

func readSample(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// uncommentExamples turns the commented [[plugin]] and [[policy]] examples
// of the sample into TOML: lines "# key = value" and "# [[table]]".
func uncommentExamples(data []byte) []byte {
	re := regexp.MustCompile(`(?m)^# ((\[\[[a-z]+\]\])|([a-z_]+ = .*))$`)
	return re.ReplaceAll(data, []byte("$1"))
}

func TestSampleIsTheDefaults(t *testing.T) {
	c, err := Parse(readSample(t), samplePath, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Validator.RequiredPlugins) == 0 {
		c.Validator.RequiredPlugins = nil // "[]" in the sample
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("the sample's values are not the defaults:\n got %+v\nwant %+v", c, Default())
	}
}

func TestSampleDocumentsEveryKey(t *testing.T) {
	data := uncommentExamples(readSample(t))
	c, err := Parse(data, samplePath, Overrides{})
	if err != nil {
		t.Fatalf("the sample with its examples: %v", err)
	}
	if len(c.Plugins) == 0 || len(c.Policy) == 0 {
		t.Fatal("the examples of [[plugin]] and [[policy]] were not found")
	}
	idx := indexKeys(data)
	present := map[string]bool{}
	for path := range idx.entries {
		present[stripIndices(path)] = true
	}
	for _, key := range tomlKeys(reflect.TypeOf(Config{}), "") {
		if !present[key] {
			t.Errorf("deploy/nrid.toml does not document %s", key)
		}
	}
}

// tomlKeys lists the dotted keys of a struct type, arrays of tables without
// indices.
func tomlKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("toml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		key := tag
		if prefix != "" {
			key = prefix + "." + tag
		}
		ft := f.Type
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			out = append(out, tomlKeys(ft, key)...)
			continue
		}
		out = append(out, key)
	}
	return out
}

func TestNoFileGivesDefaults(t *testing.T) {
	c, err := Load("", Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Socket != "/var/run/nri/nri-grpc.sock" || c.Server.PluginSocketDir != "/var/run/nri/plugins" ||
		c.Server.SocketMode != 0o600 || c.Runtime.Required || c.Observability.Tracing != "off" || !c.Observability.RedactValues {
		t.Errorf("defaults: %+v", c)
	}
	sock := "/tmp/x.sock"
	c, err = Load("", Overrides{Socket: &sock})
	if err != nil || c.Server.Socket != sock {
		t.Fatalf("override: %v %v", c, err)
	}
}

// wantError checks that err is a *Error naming line and key, and returns
// its message.
func wantError(t *testing.T, err error, line int, key string, contains ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want a *config.Error", err, err)
	}
	if e.Line != line || e.Key != key {
		t.Errorf("got line %d key %q (%v), want line %d key %q", e.Line, e.Key, err, line, key)
	}
	msg := err.Error()
	for _, c := range contains {
		if !strings.Contains(msg, c) {
			t.Errorf("%q does not contain %q", msg, c)
		}
	}
}

func TestErrorsNameKeyAndLine(t *testing.T) {
	for _, c := range []struct {
		name string
		doc  string
		line int
		key  string
		has  []string
	}{
		{"unknown key", "[server]\nsocket = \"/x.sock\"\nsockett = \"/y\"\n", 3, "server.sockett",
			[]string{"nrid.toml:3:1: server.sockett: unknown key \"sockett\""}},
		{"unknown table", "[server]\n\n[sever]\nsocket = \"/x\"\n", 3, "sever", []string{"unknown key \"sever\""}},
		{"unknown key in the second plugin", "[[plugin]]\nname = \"a\"\n[[plugin]]\nnmae = \"b\"\n", 4, "plugin[1].nmae",
			[]string{"unknown key \"nmae\""}},
		{"wrong type", "[runtime]\nrequired = \"yes\"\n", 2, "runtime.required", []string{"cannot decode"}},
		{"bad duration", "[server]\n\nrequest_timeout = \"2 seconds\"\n", 3, "server.request_timeout", []string{"not a duration"}},
		{"duration as a number", "[server]\nstop_timeout = 5\n", 2, "server.stop_timeout", []string{"must be a string"}},
		{"bad mode", "[server]\nsocket_mode = \"rw-rw----\"\n", 2, "server.socket_mode", []string{"octal"}},
		{"bad tracing", "# c\n[observability]\ntracing = \"jaeger\"\n", 3, "observability.tracing", []string{"off, stdout, otlp"}},
		{"otlp without endpoint", "[observability]\ntracing = \"otlp\"\n", 1, "observability.otlp_endpoint", []string{"must be set"}},
		{"relative socket", "[server]\nsocket = \"nrid.sock\"\n", 2, "server.socket", []string{"absolute"}},
		{"tcp without cert", "[tcp]\naddress = \"127.0.0.1:1\"\n", 1, "tcp.cert_file", []string{"always TLS"}},
		{"bad validator", "[validator]\nrequired_plugins = [\"ok\", \"bad name\"]\n", 2, "validator.required_plugins[1]", []string{"invalid character"}},
		{"bad event", "[[policy]]\nidentity = \"uid:1\"\nevents = [\n  \"all\",\n  \"create_pod\",\n]\n", 5, "policy[0].events[1]", []string{"not an event"}},
		{"bad identity in the second rule", "[[policy]]\nidentity = \"uid:1\"\n\n[[policy]]\nidentity = \"pid:7\"\n", 5, "policy[1].identity", []string{"unknown identity kind"}},
		{"inline tables", "policy = [{identity = \"uid:1\"}, {identity = \"x\"}]\n", 1, "policy[1].identity", []string{"KIND:VALUE"}},
		{"duplicate plugin", "[[plugin]]\nname = \"10-a\"\n[[plugin]]\nname = \"10-a\"\n", 4, "plugin[1].name", []string{"already configured"}},
		{"tcp endpoints without hosts", "[[policy]]\nidentity = \"cert:x\"\nplugins = [\"x\"]\nendpoints = [\"tcp\"]\n", 1, "policy[0].tcp_hosts",
			[]string{`endpoints has "tcp" but tcp_hosts is empty`}},
		{"bad tcp host", "[[policy]]\nidentity = \"cert:x\"\nplugins = [\"x\"]\nendpoints = [\"tcp\"]\ntcp_hosts = [\n  \"10.0.0.0/8\",\n  \"*.example.com\",\n]\n", 7,
			"policy[0].tcp_hosts[1]", []string{"wildcards"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc), "nrid.toml", Overrides{})
			wantError(t, err, c.line, c.key, c.has...)
		})
	}
}

func TestSeveralUnknownKeys(t *testing.T) {
	_, err := Parse([]byte("[server]\nfoo = 1\n[log]\nbar = 2\n"), "nrid.toml", Overrides{})
	if err == nil || !strings.Contains(err.Error(), "nrid.toml:2:1: server.foo") || !strings.Contains(err.Error(), "nrid.toml:4:1: log.bar") {
		t.Fatalf("got %v", err)
	}
}

func TestSyntaxErrorNamesLine(t *testing.T) {
	_, err := Parse([]byte("[server]\nsocket = \"/x.sock\"\n[log\nlevel = \"info\"\n"), "nrid.toml", Overrides{})
	wantError(t, err, 3, "", "nrid.toml:3:", "syntax error")
}

func TestOverrideErrorsNameTheFlag(t *testing.T) {
	bad := "relative.sock"
	_, err := Parse([]byte("[server]\nsocket = \"/ok.sock\"\n"), "nrid.toml", Overrides{Socket: &bad})
	if err == nil || !strings.HasPrefix(err.Error(), "flag --socket: ") {
		t.Fatalf("got %v", err)
	}
}

func TestValues(t *testing.T) {
	c, err := Parse([]byte(`
[server]
socket_mode = "0660"
plugin_socket_dir_mode = "1777"
stop_timeout = "1m30s"
[[plugin]]
name = "10-a"
required = true
[validator]
required_plugins = ["b"]
[[policy]]
identity = "uid:1000"
plugins = ["a"]
`), "t", Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.SocketMode.Perm() != 0o660 || c.Server.PluginSocketDirMode.Perm() != 0o777|os.ModeSticky ||
		c.Server.StopTimeout.D() != 90*time.Second {
		t.Errorf("values: %+v", c.Server)
	}
	p, err := c.CompilePolicy()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ValidatorConfig(p); !reflect.DeepEqual(got, validate.Config{RequiredPlugins: []string{"b", "10-a"}}) {
		t.Errorf("validator config %+v", got)
	}
}
