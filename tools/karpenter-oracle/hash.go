// Hashes: the static-drift hashes Karpenter stamps on NodePools, EC2NodeClasses and the
// NodeClaims launched from them, with their hash versions.
package main

import (
	"context"
	"encoding/json"

	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

type hashAnswer struct {
	Hash        string `json:"hash"`
	HashVersion string `json:"hashVersion"`
}

// nodePoolHash answers {"nodePool": NodePool} with NodePool.Hash() and NodePoolHashVersion.
func nodePoolHash(_ context.Context, raw json.RawMessage) (any, error) {
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
	return hashAnswer{Hash: pool.Hash(), HashVersion: karpv1.NodePoolHashVersion}, nil
}

// ec2NodeClassHash answers {"ec2NodeClass": EC2NodeClass, "caBundle": string|null} with
// EC2NodeClass.Hash(caBundle) and EC2NodeClassHashVersion. The CA bundle is the
// operator's setting (unset unless the cluster's endpoint needs one).
func ec2NodeClassHash(_ context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Op           string          `json:"op"`
		EC2NodeClass json.RawMessage `json:"ec2NodeClass"`
		CABundle     *string         `json:"caBundle"`
	}
	if err := readRequest(raw, &req); err != nil {
		return nil, err
	}
	nodeClass, err := readEC2NodeClass(req.EC2NodeClass)
	if err != nil {
		return nil, err
	}
	return hashAnswer{Hash: nodeClass.Hash(req.CABundle), HashVersion: awsv1.EC2NodeClassHashVersion}, nil
}
