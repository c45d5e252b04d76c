package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/server"
)

// TestHoldEventsWaitsForThePlugins: an event that arrives while a held
// plugin is away waits for it and is dispatched to it once it registered;
// the hold ends with its return and later events do not wait.
func TestHoldEventsWaitsForThePlugins(t *testing.T) {
	h := newHarness(t)
	h.srv.HoldEvents([]string{"10-back"}, time.Now().Add(wait()))
	done := make(chan error, 1)
	go func() {
		_, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
		done <- err
	}()
	waitUntil(t, func() bool { return h.srv.EventsHeld() == 1 }, "the event to wait for 10-back")
	h.plugin("10", "back", nil)
	if err := <-done; err != nil {
		t.Fatalf("held CreateContainer: %v", err)
	}
	if got := h.log.Of("10-back", "CreateContainer"); len(got) != 1 {
		t.Fatalf("10-back got %d CreateContainer calls, want the held event", len(got))
	}
	if _, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 1)); err != nil {
		t.Fatal(err)
	}
	if n := h.srv.EventsHeld(); n != 0 {
		t.Fatalf("%d events held after the plugin returned", n)
	}
}

// TestHoldEventsIsBoundedByTheBudget: a held plugin that never returns
// delays an event by at most half of its budget; the event then goes on
// without it.
func TestHoldEventsIsBoundedByTheBudget(t *testing.T) {
	h := newHarness(t)
	p := h.plugin("20", "present", nil)
	h.srv.HoldEvents([]string{"10-gone"}, time.Now().Add(time.Hour))
	if _, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0), server.Budget(time.Now().Add(200*time.Millisecond))); err != nil {
		t.Fatalf("CreateContainer after the hold's bound: %v", err)
	}
	if got := h.log.Of(p.Full(), "CreateContainer"); len(got) != 1 {
		t.Fatalf("the present plugin got %d CreateContainer calls, want 1", len(got))
	}
	// An event without a budget or deadline waits until the hold's end.
	h.srv.HoldEvents([]string{"10-gone"}, time.Now().Add(50*time.Millisecond))
	if _, err := h.srv.CreateContainer(context.Background(), fixture.CreateContainerRequest(1, 1)); err != nil {
		t.Fatalf("CreateContainer after the hold ended: %v", err)
	}
}

// TestHoldEventsCountsFromReceipt: an event the caller received long before
// the call (ReceivedAt: it waited in a socket during a takeover) is held only
// until the middle of its budget counted from then. Here that middle has
// passed already: the event is dispatched at once, although its budget
// still has an hour left and the hold is an hour long (a hold counted from
// the call would last half an hour: the test would hang).
func TestHoldEventsCountsFromReceipt(t *testing.T) {
	h := newHarness(t)
	p := h.plugin("20", "present", nil)
	h.srv.HoldEvents([]string{"10-gone"}, time.Now().Add(time.Hour))
	done := make(chan error, 1)
	go func() {
		now := time.Now()
		_, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0),
			server.Budget(now.Add(time.Hour)), server.ReceivedAt(now.Add(-time.Hour-time.Second)))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("CreateContainer: %v", err)
		}
	case <-time.After(wait()):
		t.Fatal("the event is held although the middle of its budget, counted from its receipt, has passed")
	}
	if got := h.log.Of(p.Full(), "CreateContainer"); len(got) != 1 {
		t.Fatalf("the present plugin got %d CreateContainer calls, want 1", len(got))
	}
}

// waitUntil polls cond until it holds, within the test's bound.
func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(wait())
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
