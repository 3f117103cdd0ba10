// Budgets: how many of a NodePool's nodes Karpenter's disruption controller may disrupt
// for a reason at a time.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// allowedDisruptions answers
//
//	{"nodePool": NodePool, "now": RFC 3339 time, "nodes": n, "disrupting": d, "reason": r}
//
// with {"budget": b, "allowed": a, "budgetError": e}: b is what the NodePool's budgets allow
// out of n nodes for reason r at now (NodePool.MustGetAllowedDisruptions: the minimum over
// the budgets that apply to r, 2^31-1 when none is active, 0 when any budget's schedule
// cannot be read); a is max(b - d, 0), as the disruption controller uses it
// (BuildDisruptionBudgetMapping); e is the budgets' error, if any.
func allowedDisruptions(_ context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Op         string          `json:"op"`
		NodePool   json.RawMessage `json:"nodePool"`
		Now        time.Time       `json:"now"`
		Nodes      int             `json:"nodes"`
		Disrupting int             `json:"disrupting"`
		Reason     string          `json:"reason"`
	}
	if err := readRequest(raw, &req); err != nil {
		return nil, err
	}
	if req.Now.IsZero() {
		return nil, fmt.Errorf("now is required")
	}
	pool, err := readNodePool(req.NodePool)
	if err != nil {
		return nil, err
	}
	clock := clocktesting.NewFakeClock(req.Now)
	reason := karpv1.DisruptionReason(req.Reason)
	budget := pool.MustGetAllowedDisruptions(clock, req.Nodes, reason)
	var budgetError *string
	if _, err := pool.GetAllowedDisruptionsByReason(clock, req.Nodes, reason); err != nil {
		message := err.Error()
		budgetError = &message
	}
	return map[string]any{
		"budget":      budget,
		"allowed":     max(budget-req.Disrupting, 0),
		"budgetError": budgetError,
	}, nil
}
