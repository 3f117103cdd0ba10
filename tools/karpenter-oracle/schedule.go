// Schedule: the NodeClaims Karpenter's provisioning scheduler plans for pending pods.
//
// The scheduler is built as the provisioner builds it (provisioning.Provisioner.NewScheduler)
// for a cluster with no nodes yet: static NodePools are left out, the rest ordered by
// weight, every NodePool offered the request's instance types; then Solve, and the
// instance-type options truncated to Karpenter's 600 cheapest as the provisioner does.
//
// Timing is that of Karpenter's scheduling benchmark: building the scheduler and its topology
// is set-up, measured apart; what is timed is Solve alone, after a garbage collection (as the
// Go benchmark framework collects before each run), each repeat on a freshly built scheduler.
// With "benchmark": true the scheduler is built exactly as that benchmark builds it (see
// benchmark.go).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"runtime"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	provisioning "sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	"sigs.k8s.io/karpenter/pkg/scheduling"
	nodepoolutils "sigs.k8s.io/karpenter/pkg/utils/nodepool"
)

type scheduleRequest struct {
	Op            string             `json:"op"`
	Pods          []json.RawMessage  `json:"pods"`
	NodePools     []json.RawMessage  `json:"nodePools"`
	InstanceTypes []instanceTypeSpec `json:"instanceTypes"`
	// Repeat solves this many times, each with a freshly built scheduler (default 1); the
	// answer is the last solve's, with every solve's time.
	Repeat int `json:"repeat"`
	// Benchmark builds the scheduler as Karpenter's scheduling benchmark does: test.Options(),
	// NumConcurrentReconciles(5).
	Benchmark bool `json:"benchmark"`
	// BenchmarkInstanceTypes, when above 0, offers the benchmark's n instance types
	// (fake.InstanceTypes(n), see benchmark.go) instead of InstanceTypes.
	BenchmarkInstanceTypes int `json:"benchmarkInstanceTypes"`
}

type plannedClaim struct {
	NodePool      string                                        `json:"nodePool"`
	Pods          []string                                      `json:"pods"`
	InstanceTypes []string                                      `json:"instanceTypes"`
	CheapestPrice *float64                                      `json:"cheapestPrice"`
	Requirements  []karpv1.NodeSelectorRequirementWithMinValues `json:"requirements"`
}

type scheduleAnswer struct {
	NodeClaims    []plannedClaim    `json:"nodeClaims"`
	Unschedulable map[string]string `json:"unschedulable"`
	// SolveSeconds is the time of each Solve and SetupSeconds of building its scheduler and
	// topology (NewTopology, NewScheduler), both measured here: no process start, JSON,
	// reading of the request, garbage collection before the solve or truncation after it.
	SolveSeconds []float64 `json:"solveSeconds"`
	SetupSeconds []float64 `json:"setupSeconds"`
}

// karpenterContext carries Karpenter's operator options at their defaults.
func karpenterContext(ctx context.Context) (context.Context, error) {
	opts := &options.Options{}
	flags := &options.FlagSet{FlagSet: flag.NewFlagSet("karpenter", flag.ContinueOnError)}
	opts.AddFlags(flags)
	if err := opts.Parse(flags); err != nil {
		return nil, err
	}
	return injection.WithControllerName(options.ToContext(ctx, opts), "provisioner"), nil
}

func podKey(pod *corev1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}

func schedule(ctx context.Context, raw json.RawMessage) (any, error) {
	var req scheduleRequest
	if err := readRequest(raw, &req); err != nil {
		return nil, err
	}
	var err error
	if req.Benchmark {
		ctx = benchmarkContext(ctx)
	} else if ctx, err = karpenterContext(ctx); err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(req.Pods))
	for _, rawPod := range req.Pods {
		pod, err := readPod(rawPod)
		if err != nil {
			return nil, err
		}
		if pod.Namespace == "" {
			pod.Namespace = "default"
		}
		if pod.UID == "" {
			pod.UID = types.UID(podKey(pod)) // the scheduler keys its caches by UID
		}
		pods = append(pods, pod)
	}
	var pools []*karpv1.NodePool
	for _, rawPool := range req.NodePools {
		pool, err := readNodePool(rawPool)
		if err != nil {
			return nil, err
		}
		if !nodepoolutils.IsStatic(pool) {
			pools = append(pools, pool)
		}
	}
	if len(pools) == 0 {
		return nil, fmt.Errorf("no dynamic NodePool given")
	}
	nodepoolutils.OrderByWeight(pools)
	answer := scheduleAnswer{}
	var results provisioning.Results
	for range max(req.Repeat, 1) {
		var its []*cloudprovider.InstanceType
		if req.BenchmarkInstanceTypes > 0 {
			its = benchmarkInstanceTypes(req.BenchmarkInstanceTypes)
		} else if its, err = buildInstanceTypes(req.InstanceTypes); err != nil {
			return nil, err
		}
		start := time.Now()
		scheduler, err := newScheduler(ctx, its, pools, pods, req.Benchmark)
		if err != nil {
			return nil, err
		}
		answer.SetupSeconds = append(answer.SetupSeconds, time.Since(start).Seconds())
		runtime.GC()
		start = time.Now()
		results, err = scheduler.Solve(ctx, pods)
		answer.SolveSeconds = append(answer.SolveSeconds, time.Since(start).Seconds())
		if err != nil {
			return nil, fmt.Errorf("solving: %w", err)
		}
		results = results.TruncateInstanceTypes(ctx, provisioning.MaxInstanceTypes)
	}
	answer.NodeClaims, answer.Unschedulable = describe(results)
	return answer, nil
}

// newScheduler builds the scheduler, as the provisioner does (or, with benchmark, as
// Karpenter's scheduling benchmark does), for a cluster with no nodes; its are fresh for each
// scheduler (it caches what it derives from them).
func newScheduler(ctx context.Context, its []*cloudprovider.InstanceType, pools []*karpv1.NodePool, pods []*corev1.Pod, benchmark bool) (*provisioning.Scheduler, error) {
	byPool := map[string][]*cloudprovider.InstanceType{}
	for _, pool := range pools {
		byPool[pool.Name] = its
	}
	kube := kubeClient()
	realClock := &clock.RealClock{}
	var opts []provisioning.Options
	if benchmark {
		opts = benchmarkOptions()
	}
	cluster := state.NewCluster(realClock, kube, awsCloudProvider(kube, its, nil, nil))
	topology, err := provisioning.NewTopology(ctx, kube, cluster, nil, pools, byPool, pods, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracking topology counts: %w", err)
	}
	return provisioning.NewScheduler(ctx, kube, pools, cluster, nil, topology, byPool, nil, recorder(), realClock, nil, nil, opts...), nil
}

// describe lists the planned NodeClaims (pods sorted by namespace/name, instance types in
// Karpenter's order: cheapest compatible offering first) and the pods left unscheduled.
func describe(results provisioning.Results) ([]plannedClaim, map[string]string) {
	claims := make([]plannedClaim, 0, len(results.NewNodeClaims))
	for _, claim := range results.NewNodeClaims {
		planned := plannedClaim{NodePool: claim.NodePoolName}
		for _, pod := range claim.Pods {
			planned.Pods = append(planned.Pods, podKey(pod))
		}
		sort.Strings(planned.Pods)
		for _, it := range claim.InstanceTypeOptions {
			planned.InstanceTypes = append(planned.InstanceTypes, it.Name)
			if price, ok := cheapest(it, claim.Requirements); ok && (planned.CheapestPrice == nil || price < *planned.CheapestPrice) {
				planned.CheapestPrice = &price
			}
		}
		planned.Requirements = claim.Requirements.NodeSelectorRequirements()
		sort.Slice(planned.Requirements, func(i, j int) bool { return planned.Requirements[i].Key < planned.Requirements[j].Key })
		claims = append(claims, planned)
	}
	unschedulable := map[string]string{}
	for pod, err := range results.PodErrors {
		unschedulable[podKey(pod)] = err.Error()
	}
	return claims, unschedulable
}

// cheapest is the price of the cheapest available offering of it the requirements allow.
func cheapest(it *cloudprovider.InstanceType, requirements scheduling.Requirements) (float64, bool) {
	found, best := false, 0.0
	for _, offering := range it.Offerings.Available().Compatible(requirements) {
		if !found || offering.Price < best {
			found, best = true, offering.Price
		}
	}
	return best, found
}
