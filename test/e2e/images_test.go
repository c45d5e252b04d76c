//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// buildImages writes the two images as OCI image layout tarballs, ready for
// `ctr images import`: a single layer with /sleeper (static), empty /tmp,
// /proc, /dev, /sys and a minimal /etc/passwd and /etc/group. The pause
// image and the workload image are the same binary.
func (s *Suite) buildImages() error {
	bin, err := os.ReadFile(filepath.Join(s.Bin, "sleeper"))
	if err != nil {
		return err
	}
	dir := filepath.Join(s.RunDir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, ref := range []string{PauseImage, SleeperImage} {
		b, err := ociArchive(ref, bin)
		if err != nil {
			return err
		}
		out := filepath.Join(dir, fmt.Sprintf("image-%d.tar", len(s.Images)))
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return err
		}
		s.Images = append(s.Images, out)
	}
	return nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

type tarEntry struct {
	name string
	mode int64
	body []byte
	dir  bool
}

func writeTar(entries []tarEntry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: time.Unix(0, 0), Uid: 0, Gid: 0, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if !e.dir {
			if _, err := tw.Write(e.body); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ociArchive builds one image as an OCI layout archive whose index names it
// ref (io.containerd.image.name), so that ctr import tags it.
func ociArchive(ref string, sleeper []byte) ([]byte, error) {
	layer, err := writeTar([]tarEntry{
		{name: "dev/", mode: 0o755, dir: true},
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\n")},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/:/sleeper\n")},
		{name: "proc/", mode: 0o755, dir: true},
		{name: "sleeper", mode: 0o755, body: sleeper},
		{name: "sys/", mode: 0o755, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	})
	if err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(layer); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": []string{"/sleeper"}, "Env": []string{"PATH=/"}, "WorkingDir": "/"},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{digest(layer)}},
	})
	if err != nil {
		return nil, err
	}
	desc := func(mt string, b []byte) map[string]any {
		return map[string]any{"mediaType": mt, "digest": digest(b), "size": len(b)}
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        desc("application/vnd.oci.image.config.v1+json", config),
		"layers":        []any{desc("application/vnd.oci.image.layer.v1.tar+gzip", gz.Bytes())},
	})
	if err != nil {
		return nil, err
	}
	md := desc("application/vnd.oci.image.manifest.v1+json", manifest)
	md["platform"] = map[string]string{"architecture": runtime.GOARCH, "os": "linux"}
	md["annotations"] = map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": "1"}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		"manifests": []any{md}})
	if err != nil {
		return nil, err
	}
	blob := func(b []byte) tarEntry {
		return tarEntry{name: "blobs/sha256/" + digest(b)[len("sha256:"):], mode: 0o644, body: b}
	}
	return writeTar([]tarEntry{
		{name: "oci-layout", mode: 0o644, body: []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{name: "index.json", mode: 0o644, body: index},
		{name: "blobs/", mode: 0o755, dir: true},
		{name: "blobs/sha256/", mode: 0o755, dir: true},
		blob(gz.Bytes()), blob(config), blob(manifest),
	})
}
