package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

func runState(ctx context.Context, g *globals, args []string) error {
	fs := g.flags("state", "state [-pod ID] [-no-trunc]")
	pod := fs.String("pod", "", "only this pod (full id) and its containers")
	full := fs.Bool("no-trunc", false, "show full ids")
	if err := parse(fs, g, args); err != nil {
		return err
	}
	c, err := g.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	cctx, cancel := g.callContext(ctx)
	defer cancel()
	stream, err := c.admin().GetState(cctx, &nriv1beta1.GetStateRequest{PodId: *pod})
	if err != nil {
		return err
	}
	all := &nriv1beta1.GetStateResponse{}
	for {
		page, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		all.Pods = append(all.Pods, page.GetPods()...)
		all.Containers = append(all.Containers, page.GetContainers()...)
	}
	if g.json() {
		return printJSON(g.stdout, all)
	}
	if len(all.GetPods()) == 0 && len(all.GetContainers()) == 0 {
		_, err := fmt.Fprintln(g.stdout, "no pods or containers cached")
		return err
	}
	byPod := map[string]*nriv1beta1.PodSandbox{}
	count := map[string]int{}
	for _, p := range all.GetPods() {
		byPod[p.GetId()] = p
	}
	for _, ct := range all.GetContainers() {
		count[ct.GetPodSandboxId()]++
	}
	tw := newTable(g.stdout)
	fmt.Fprintf(tw, "POD ID\tNAMESPACE/NAME\tUID\tCONTAINERS\n")
	for _, p := range all.GetPods() {
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%d\n", short(p.GetId(), 13, *full), p.GetNamespace(), p.GetName(), orDash(p.GetUid()), count[p.GetId()])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(g.stdout)
	tw = newTable(g.stdout)
	fmt.Fprintf(tw, "CONTAINER ID\tPOD\tNAME\tSTATE\n")
	for _, ct := range all.GetContainers() {
		podName := short(ct.GetPodSandboxId(), 13, *full)
		if p := byPod[ct.GetPodSandboxId()]; p != nil {
			podName = p.GetNamespace() + "/" + p.GetName()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", short(ct.GetId(), 13, *full), podName, ct.GetName(),
			kebab(ct.GetState().String(), "CONTAINER_STATE_"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(g.stdout, "\n%d pods, %d containers\n", len(all.GetPods()), len(all.GetContainers()))
	return err
}
