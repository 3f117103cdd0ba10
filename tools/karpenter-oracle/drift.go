// Drift: whether Karpenter marks a launched NodeClaim drifted, and why.
//
// The NodeClaim goes through Karpenter's own nodeclaim disruption controller with the AWS
// provider's CloudProvider (see cloud.go), so every check runs in Karpenter's order:
// NodePool hash (NodePoolDrifted), requirements (RequirementsDrifted), instance type
// (InstanceTypeNotFound, only for NodeClaims older than an hour), then the AWS provider's:
// EC2NodeClass hash (NodeClassDrift), AMI (AMIDrift, from status.amis), security groups
// (SecurityGroupDrift) and subnet (SubnetDrift) of the given instance, capacity
// reservation and placement group. A check that cannot be made (an EC2NodeClass with no
// resolved AMIs, a NodeClaim with no image) is an error of Karpenter's, reported as
// checkError with no drift, as Karpenter leaves the NodeClaim unmarked.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	"github.com/aws/karpenter-provider-aws/pkg/providers/instance"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/disruption"
)

type driftRequest struct {
	Op           string          `json:"op"`
	NodeClaim    json.RawMessage `json:"nodeClaim"`
	NodePool     json.RawMessage `json:"nodePool"`
	EC2NodeClass json.RawMessage `json:"ec2NodeClass"`
	// LaunchedWith, when given, stamps the NodeClaim with the hashes of the NodePool and
	// EC2NodeClass it was launched from, as Karpenter does at launch.
	LaunchedWith *struct {
		NodePool     json.RawMessage `json:"nodePool"`
		EC2NodeClass json.RawMessage `json:"ec2NodeClass"`
	} `json:"launchedWith"`
	Instance *struct {
		ID               string   `json:"id"`
		SubnetID         string   `json:"subnetID"`
		SecurityGroupIDs []string `json:"securityGroupIDs"`
	} `json:"instance"`
	// InstanceTypes default to the NodeClaim's own type, described by its labels.
	InstanceTypes []instanceTypeSpec `json:"instanceTypes"`
	// Now defaults to the NodeClaim's creation time (which defaults to the present).
	Now      *time.Time `json:"now"`
	CABundle *string    `json:"caBundle"`
}

type driftAnswer struct {
	Reason     string  `json:"reason"`
	CheckError *string `json:"checkError"`
}

func drift(ctx context.Context, raw json.RawMessage) (any, error) {
	var req driftRequest
	if err := readRequest(raw, &req); err != nil {
		return nil, err
	}
	claim, err := readNodeClaim(req.NodeClaim)
	if err != nil {
		return nil, err
	}
	pool, err := readNodePool(req.NodePool)
	if err != nil {
		return nil, err
	}
	nodeClass, err := readEC2NodeClass(req.EC2NodeClass)
	if err != nil {
		return nil, err
	}
	stampNodePool(pool, pool)
	stampEC2NodeClass(nodeClass, nodeClass, req.CABundle)
	if req.LaunchedWith != nil {
		if err := stampLaunch(claim, req.LaunchedWith.NodePool, req.LaunchedWith.EC2NodeClass, req.CABundle); err != nil {
			return nil, err
		}
	}
	clock := clocktesting.NewFakeClock(time.Now())
	if claim.CreationTimestamp.IsZero() {
		claim.CreationTimestamp = metav1.NewTime(clock.Now())
	}
	clock.SetTime(claim.CreationTimestamp.Time)
	if req.Now != nil {
		clock.SetTime(*req.Now)
	}
	if claim.Labels == nil {
		claim.Labels = map[string]string{}
	}
	if _, ok := claim.Labels[karpv1.NodePoolLabelKey]; !ok {
		claim.Labels[karpv1.NodePoolLabelKey] = pool.Name
	}
	if len(claim.Status.Conditions) == 0 {
		claim.StatusConditions().SetTrue(karpv1.ConditionTypeLaunched)
	}
	var inst *instance.Instance
	if req.Instance != nil {
		inst = &instance.Instance{ID: req.Instance.ID, SubnetID: req.Instance.SubnetID, SecurityGroupIDs: req.Instance.SecurityGroupIDs}
		if claim.Status.ProviderID == "" {
			claim.Status.ProviderID = fmt.Sprintf("aws:///%s/%s", claim.Labels[corev1.LabelTopologyZone], req.Instance.ID)
		}
	}
	specs := req.InstanceTypes
	if specs == nil {
		specs = []instanceTypeSpec{ownType(claim)}
	}
	types, err := buildInstanceTypes(specs)
	if err != nil {
		return nil, err
	}
	kube := kubeClient(pool, nodeClass, claim)
	// The controller patches the NodeClaim's status: give it the stored object, with the
	// resource version the API server would have given it.
	if err := kube.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
		return nil, fmt.Errorf("storing the NodeClaim: %w", err)
	}
	controller := disruption.NewController(clock, kube, awsCloudProvider(kube, types, inst, req.CABundle))
	answer := driftAnswer{}
	if _, err := controller.Reconcile(ctx, claim); err != nil {
		message := err.Error()
		answer.CheckError = &message
	}
	if drifted := claim.StatusConditions().Get(karpv1.ConditionTypeDrifted); drifted.IsTrue() {
		answer.Reason = drifted.Reason
	}
	return answer, nil
}

// ownType is the NodeClaim's instance type as its labels describe it, offered where the
// NodeClaim runs.
func ownType(claim *karpv1.NodeClaim) instanceTypeSpec {
	labels := claim.Labels
	return instanceTypeSpec{
		Name:   labels[corev1.LabelInstanceTypeStable],
		Labels: labels,
		Offerings: []offeringSpec{{
			Zone:         labels[corev1.LabelTopologyZone],
			CapacityType: labels[karpv1.CapacityTypeLabelKey],
			Available:    true,
		}},
	}
}

// stampNodePool annotates pool with from's hash, unless it carries one (the NodePool hash
// controller's work).
func stampNodePool(pool, from *karpv1.NodePool) {
	if _, ok := pool.Annotations[karpv1.NodePoolHashAnnotationKey]; ok {
		return
	}
	pool.Annotations = withAnnotations(pool.Annotations, karpv1.NodePoolHashAnnotationKey, from.Hash(), karpv1.NodePoolHashVersionAnnotationKey, karpv1.NodePoolHashVersion)
}

// stampEC2NodeClass annotates nodeClass with from's hash, unless it carries one.
func stampEC2NodeClass(nodeClass, from *awsv1.EC2NodeClass, caBundle *string) {
	if _, ok := nodeClass.Annotations[awsv1.AnnotationEC2NodeClassHash]; ok {
		return
	}
	nodeClass.Annotations = withAnnotations(nodeClass.Annotations, awsv1.AnnotationEC2NodeClassHash, from.Hash(caBundle), awsv1.AnnotationEC2NodeClassHashVersion, awsv1.EC2NodeClassHashVersion)
}

// stampLaunch annotates claim with the hashes of the NodePool and EC2NodeClass it was
// launched from (either may be absent).
func stampLaunch(claim *karpv1.NodeClaim, rawPool, rawClass json.RawMessage, caBundle *string) error {
	if len(rawPool) > 0 && string(rawPool) != "null" {
		pool, err := readNodePool(rawPool)
		if err != nil {
			return fmt.Errorf("launchedWith: %w", err)
		}
		claim.Annotations = withAnnotations(claim.Annotations, karpv1.NodePoolHashAnnotationKey, pool.Hash(), karpv1.NodePoolHashVersionAnnotationKey, karpv1.NodePoolHashVersion)
	}
	if len(rawClass) > 0 && string(rawClass) != "null" {
		nodeClass, err := readEC2NodeClass(rawClass)
		if err != nil {
			return fmt.Errorf("launchedWith: %w", err)
		}
		claim.Annotations = withAnnotations(claim.Annotations, awsv1.AnnotationEC2NodeClassHash, nodeClass.Hash(caBundle), awsv1.AnnotationEC2NodeClassHashVersion, awsv1.EC2NodeClassHashVersion)
	}
	return nil
}

func withAnnotations(annotations map[string]string, pairs ...string) map[string]string {
	out := map[string]string{}
	for key, value := range annotations {
		out[key] = value
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	return out
}
