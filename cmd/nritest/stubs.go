package main

import (
	"context"
	"errors"
	"io"
)

type classicLaunch struct{}

func (c *classicLaunch) stop() {}

func (h *pluginHarness) launchClassic(context.Context, *nriServer) error {
	return errors.New("not yet")
}

func runRuntime(context.Context, []string, io.Writer, io.Writer) error { return errors.New("not yet") }
func runMatrix(context.Context, []string, io.Writer, io.Writer) error  { return errors.New("not yet") }
