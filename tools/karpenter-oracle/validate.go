package main

// Karpenter's runtime validation of a NodePool (what its ValidationSucceeded condition reports
// once the API server has admitted the object), and the label sets that validation reads.

import (
	"context"
	"encoding/json"

	"k8s.io/apimachinery/pkg/util/sets"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

func init() {
	handlers["nodepool-runtime-validate"] = nodePoolRuntimeValidate
	handlers["label-sets"] = labelSets
}

// nodePoolRuntimeValidate answers {"valid": bool, "message": string} for {"nodePool": {...}}.
func nodePoolRuntimeValidate(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Op       string          `json:"op"`
		NodePool json.RawMessage `json:"nodePool"`
	}
	if err := readRequest(raw, &req); err != nil {
		return nil, err
	}
	pool, err := readNodePool(req.NodePool)
	if err != nil {
		return nil, err
	}
	if err := pool.RuntimeValidate(ctx); err != nil {
		return map[string]any{"valid": false, "message": err.Error()}, nil
	}
	return map[string]any{"valid": true, "message": ""}, nil
}

// labelSets answers Karpenter's label sets as the AWS provider extends them: the well-known
// labels, the restricted label domains and labels, and the known values of requirements.
func labelSets(_ context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Op string `json:"op"`
	}
	if err := readRequest(raw, &req); err != nil {
		return nil, err
	}
	known := map[string][]string{}
	for key, values := range karpv1.WellKnownValuesForRequirements {
		known[key] = sets.List(values)
	}
	return map[string]any{
		"wellKnownLabels":        sets.List(karpv1.WellKnownLabels),
		"restrictedLabelDomains": sets.List(karpv1.RestrictedLabelDomains),
		"restrictedLabels":       sets.List(karpv1.RestrictedLabels),
		"knownValues":            known,
	}, nil
}
