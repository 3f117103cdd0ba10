// Benchmark: Karpenter's scheduler built as its own scheduling benchmark builds it
// (BenchmarkScheduling* in the provisioning/scheduling package), over that benchmark's
// synthetic instance types.
//
// A schedule request with "benchmark": true gets the benchmark's operator options (those of
// Karpenter's test.Options()) and its scheduler option NumConcurrentReconciles(5); with
// "benchmarkInstanceTypes": n its instance types are those of Karpenter's fake cloud provider,
// fake.InstanceTypes(n), built here to that definition (the fake package itself is test code
// of Karpenter's and not imported): type i has i+1 CPUs, 2(i+1) GiB and room for 10(i+1) pods;
// 100m CPU and 10Mi memory kube-reserved; spot offerings in test-zone-1 and -2, on-demand in
// test-zone-1, -2 and -3, all available at 0.1 per CPU plus 0.1 per 10^9 bytes of memory; its
// requirements name the type, amd64, the operating systems linux, windows and darwin, its zones
// and capacity types, "size" (large above 4 CPUs and 8Gi, else small), "special" (optional on
// a large type, else absent) and "integer" (its CPUs). The op benchmark-instance-types
// describes them, so that a test can hold driftwave's synthetic types to them.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	provisioning "sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	"sigs.k8s.io/karpenter/pkg/scheduling"
)

func init() { handlers["benchmark-instance-types"] = describeBenchmarkTypes }

// benchmarkConcurrency is the NumConcurrentReconciles Karpenter's scheduling benchmark gives
// its scheduler (how many candidate NodeClaims it tries a pod on at once).
const benchmarkConcurrency = 5

// Labels of the fake cloud provider's instance types.
const (
	fakeLabelSize    = "size"
	fakeLabelSpecial = "special"
	fakeLabelInteger = "integer"
)

// benchmarkContext carries the operator options Karpenter's tests and benchmark run with
// (test.Options() at its defaults).
func benchmarkContext(ctx context.Context) context.Context {
	opts := &options.Options{
		MetricsPort:             8080,
		HealthProbePort:         8081,
		KubeClientQPS:           200,
		KubeClientBurst:         300,
		DisableControllerWarmup: true,
		MemoryLimit:             -1,
		CPURequests:             5000,
		LogOutputPaths:          "stdout",
		LogErrorOutputPaths:     "stderr",
		BatchMaxDuration:        10 * time.Second,
		BatchIdleDuration:       time.Second,
		PreferencePolicy:        options.PreferencePolicyRespect,
		MinValuesPolicy:         options.MinValuesPolicyStrict,
		IgnoreDRARequests:       true,
		FeatureGates:            options.FeatureGates{ReservedCapacity: true},
	}
	return options.ToContext(injection.WithControllerName(ctx, "provisioner"), opts)
}

// benchmarkOptions are the scheduler options of Karpenter's scheduling benchmark.
func benchmarkOptions() []provisioning.Options {
	return []provisioning.Options{provisioning.NumConcurrentReconciles(benchmarkConcurrency)}
}

// benchmarkInstanceTypes are fake.InstanceTypes(count) (see the file's comment).
func benchmarkInstanceTypes(count int) []*cloudprovider.InstanceType {
	types := make([]*cloudprovider.InstanceType, 0, count)
	for i := range count {
		types = append(types, benchmarkInstanceType(i))
	}
	return types
}

func benchmarkInstanceType(i int) *cloudprovider.InstanceType {
	name := fmt.Sprintf("fake-it-%d", i)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(fmt.Sprintf("%d", i+1)),
		corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", (i+1)*2)),
		corev1.ResourcePods:   resource.MustParse(fmt.Sprintf("%d", (i+1)*10)),
	}
	price := 0.1*capacity.Cpu().AsApproximateFloat64() + 0.1*capacity.Memory().AsApproximateFloat64()/1e9
	offerings := cloudprovider.Offerings{}
	for _, offer := range [][2]string{
		{karpv1.CapacityTypeSpot, "test-zone-1"},
		{karpv1.CapacityTypeSpot, "test-zone-2"},
		{karpv1.CapacityTypeOnDemand, "test-zone-1"},
		{karpv1.CapacityTypeOnDemand, "test-zone-2"},
		{karpv1.CapacityTypeOnDemand, "test-zone-3"},
	} {
		offerings = append(offerings, &cloudprovider.Offering{
			Available: true,
			Requirements: scheduling.NewLabelRequirements(map[string]string{
				karpv1.CapacityTypeLabelKey: offer[0],
				corev1.LabelTopologyZone:    offer[1],
			}),
			Price: price,
		})
	}
	large := capacity.Cpu().Cmp(resource.MustParse("4")) > 0 && capacity.Memory().Cmp(resource.MustParse("8Gi")) > 0
	size, special := scheduling.NewRequirement(fakeLabelSize, corev1.NodeSelectorOpIn, "small"), scheduling.NewRequirement(fakeLabelSpecial, corev1.NodeSelectorOpDoesNotExist)
	if large {
		size, special = scheduling.NewRequirement(fakeLabelSize, corev1.NodeSelectorOpIn, "large"), scheduling.NewRequirement(fakeLabelSpecial, corev1.NodeSelectorOpIn, "optional")
	}
	requirements := scheduling.NewRequirements(
		scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, name),
		scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, karpv1.ArchitectureAmd64),
		scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "darwin", string(corev1.Linux), string(corev1.Windows)),
		scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-zone-1", "test-zone-2", "test-zone-3"),
		scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand),
		size,
		special,
		scheduling.NewRequirement(fakeLabelInteger, corev1.NodeSelectorOpIn, fmt.Sprint(i+1)),
	)
	return &cloudprovider.InstanceType{
		Name:         name,
		Requirements: requirements,
		Offerings:    offerings,
		Capacity:     capacity,
		Overhead: &cloudprovider.InstanceTypeOverhead{
			KubeReserved: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("10Mi"),
			},
		},
	}
}

type benchmarkTypesRequest struct {
	Op    string `json:"op"`
	Count int    `json:"count"`
}

type describedOffering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	Available    bool    `json:"available"`
}

type describedType struct {
	Name         string                                        `json:"name"`
	Capacity     corev1.ResourceList                           `json:"capacity"`
	Allocatable  corev1.ResourceList                           `json:"allocatable"`
	Requirements []karpv1.NodeSelectorRequirementWithMinValues `json:"requirements"`
	Offerings    []describedOffering                           `json:"offerings"`
}

// describeBenchmarkTypes answers benchmark-instance-types: each of the benchmark's count types
// with its capacity, allocatable, requirements (by key, values sorted) and offerings.
func describeBenchmarkTypes(_ context.Context, raw json.RawMessage) (any, error) {
	var req benchmarkTypesRequest
	if err := readRequest(raw, &req); err != nil {
		return nil, err
	}
	described := []describedType{}
	for _, it := range benchmarkInstanceTypes(req.Count) {
		out := describedType{
			Name:         it.Name,
			Capacity:     it.Capacity,
			Allocatable:  it.Allocatable(),
			Requirements: it.Requirements.NodeSelectorRequirements(),
		}
		for i := range out.Requirements {
			sort.Strings(out.Requirements[i].Values)
		}
		sort.Slice(out.Requirements, func(i, j int) bool { return out.Requirements[i].Key < out.Requirements[j].Key })
		for _, o := range it.Offerings {
			out.Offerings = append(out.Offerings, describedOffering{
				Zone:         o.Requirements.Get(corev1.LabelTopologyZone).Any(),
				CapacityType: o.Requirements.Get(karpv1.CapacityTypeLabelKey).Any(),
				Price:        o.Price,
				Available:    o.Available,
			})
		}
		described = append(described, out)
	}
	return map[string]any{"instanceTypes": described}, nil
}
