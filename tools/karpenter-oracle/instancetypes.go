// Instance types: the cloud provider's instance types and offerings, given as JSON, in the
// shape Karpenter's AWS provider gives them to the scheduler.
package main

import (
	"fmt"
	"sort"

	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/scheduling"
)

// instanceTypeSpec is one instance type of a request:
//
//	{"name": "m5.large", "labels": {...}, "capacity": {"cpu": "2", ...},
//	 "allocatable": {...}, "offerings": [{"zone", "capacityType", "price", "available"}]}
//
// labels are the well-known labels a node of the type carries; allocatable (what pods may
// use) defaults to capacity, the difference being the type's overhead.
type instanceTypeSpec struct {
	Name        string              `json:"name"`
	Labels      map[string]string   `json:"labels"`
	Capacity    corev1.ResourceList `json:"capacity"`
	Allocatable corev1.ResourceList `json:"allocatable"`
	Offerings   []offeringSpec      `json:"offerings"`
}

type offeringSpec struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	Available    bool    `json:"available"`
}

// absentAsDoesNotExist are the labels the AWS provider always defines on an instance type's
// requirements, as DoesNotExist when the type has no value for them (computeRequirements),
// so that a pod or an AMI asking for them is not matched by an undefined label.
var absentAsDoesNotExist = []string{
	corev1.LabelWindowsBuild,
	awsv1.LabelInstanceCPUManufacturer,
	awsv1.LabelInstanceCPUSustainedClockSpeedMhz,
	awsv1.LabelInstanceEBSBandwidth,
	awsv1.LabelInstanceNetworkBandwidth,
	awsv1.LabelInstanceCategory,
	awsv1.LabelInstanceCapabilityFlex,
	awsv1.LabelInstanceFamily,
	awsv1.LabelInstanceGeneration,
	awsv1.LabelInstanceLocalNVME,
	awsv1.LabelInstanceSize,
	awsv1.LabelInstanceGPUName,
	awsv1.LabelInstanceGPUManufacturer,
	awsv1.LabelInstanceGPUCount,
	awsv1.LabelInstanceGPUMemory,
	awsv1.LabelInstanceAcceleratorName,
	awsv1.LabelInstanceAcceleratorManufacturer,
	awsv1.LabelInstanceAcceleratorCount,
}

// typeRequirements are the requirements of a type with labels: each label In its value,
// the always-defined labels it lacks DoesNotExist.
func typeRequirements(labels map[string]string) scheduling.Requirements {
	requirements := scheduling.NewLabelRequirements(labels)
	for _, key := range absentAsDoesNotExist {
		if _, ok := labels[key]; !ok {
			requirements.Add(scheduling.NewRequirement(key, corev1.NodeSelectorOpDoesNotExist))
		}
	}
	return requirements
}

// build turns the spec into Karpenter's InstanceType: its zones and capacity types are
// those of its offerings; each offering requires its zone and capacity type.
func (spec instanceTypeSpec) build() (*cloudprovider.InstanceType, error) {
	if spec.Name == "" {
		return nil, fmt.Errorf("an instance type needs a name")
	}
	labels := map[string]string{}
	for key, value := range spec.Labels {
		labels[key] = value
	}
	labels[corev1.LabelInstanceTypeStable] = spec.Name
	requirements := typeRequirements(labels)
	zones, capacityTypes := map[string]bool{}, map[string]bool{}
	offerings := cloudprovider.Offerings{}
	for _, offer := range spec.Offerings {
		if offer.CapacityType == karpv1.CapacityTypeReserved {
			return nil, fmt.Errorf("instance type %s: reserved offerings are not supported", spec.Name)
		}
		zones[offer.Zone], capacityTypes[offer.CapacityType] = true, true
		offerings = append(offerings, &cloudprovider.Offering{
			Requirements: scheduling.NewRequirements(
				scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, offer.Zone),
				scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, offer.CapacityType),
			),
			Price:     offer.Price,
			Available: offer.Available,
		})
	}
	requirements.Add(
		scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, keys(zones)...),
		scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, keys(capacityTypes)...),
	)
	overhead := corev1.ResourceList{}
	for name, allocatable := range spec.Allocatable {
		capacity, ok := spec.Capacity[name]
		if !ok {
			return nil, fmt.Errorf("instance type %s: allocatable %s without capacity", spec.Name, name)
		}
		reserved := capacity.DeepCopy()
		reserved.Sub(allocatable)
		if reserved.Sign() < 0 {
			return nil, fmt.Errorf("instance type %s: allocatable %s above capacity", spec.Name, name)
		}
		overhead[name] = reserved
	}
	return &cloudprovider.InstanceType{
		Name:         spec.Name,
		Requirements: requirements,
		Offerings:    offerings,
		Capacity:     spec.Capacity,
		Overhead:     &cloudprovider.InstanceTypeOverhead{KubeReserved: overhead, SystemReserved: corev1.ResourceList{}, EvictionThreshold: corev1.ResourceList{}},
	}, nil
}

func buildInstanceTypes(specs []instanceTypeSpec) ([]*cloudprovider.InstanceType, error) {
	types := make([]*cloudprovider.InstanceType, 0, len(specs))
	for _, spec := range specs {
		built, err := spec.build()
		if err != nil {
			return nil, err
		}
		types = append(types, built)
	}
	return types, nil
}

func keys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for key := range set {
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}
