// Cloud: Karpenter's AWS CloudProvider with its EC2-facing providers replaced by the
// answers a request gives, and a Kubernetes client holding a request's objects.
//
// Drift and cluster state need a CloudProvider. The real one is used, so its own drift
// checks run; only the providers that would call EC2 are stand-ins: instance types come
// from the request, the instance from the request's "instance", no placement group is
// resolved. A stand-in asked for anything else fails the request with an error naming
// the call (never a silent default).
package main

import (
	"context"
	"fmt"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	awscloudprovider "github.com/aws/karpenter-provider-aws/pkg/cloudprovider"
	"github.com/aws/karpenter-provider-aws/pkg/providers/amifamily"
	"github.com/aws/karpenter-provider-aws/pkg/providers/capacityreservation"
	"github.com/aws/karpenter-provider-aws/pkg/providers/instance"
	"github.com/aws/karpenter-provider-aws/pkg/providers/instancetype"
	"github.com/aws/karpenter-provider-aws/pkg/providers/placementgroup"
	"github.com/aws/karpenter-provider-aws/pkg/providers/securitygroup"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/controllers/nodeoverlay"
	"sigs.k8s.io/karpenter/pkg/events"
)

// unsupported is what a stand-in answers to a call the oracle does not model.
func unsupported(call string) error {
	return fmt.Errorf("the oracle does not model %s", call)
}

// givenInstanceTypes lists the request's instance types for every EC2NodeClass.
type givenInstanceTypes struct {
	instancetype.Provider
	types []*cloudprovider.InstanceType
}

func (g givenInstanceTypes) List(context.Context, instancetype.NodeClass) ([]*cloudprovider.InstanceType, error) {
	return g.types, nil
}

func (g givenInstanceTypes) Get(_ context.Context, _ instancetype.NodeClass, name ec2types.InstanceType) (*cloudprovider.InstanceType, error) {
	for _, it := range g.types {
		if it.Name == string(name) {
			return it, nil
		}
	}
	return nil, fmt.Errorf("instance type %s is not among the request's", name)
}

// givenInstance is the one EC2 instance a drift request describes.
type givenInstance struct {
	instance.Provider
	instance *instance.Instance
}

func (g givenInstance) Get(_ context.Context, id string, _ ...instance.Options) (*instance.Instance, error) {
	if g.instance == nil {
		return nil, unsupported("an instance (the request has no \"instance\")")
	}
	if id != g.instance.ID {
		return nil, fmt.Errorf("instance %s is not the request's (%s)", id, g.instance.ID)
	}
	return g.instance, nil
}

// noPlacementGroup resolves no placement group for any EC2NodeClass.
type noPlacementGroup struct{}

func (noPlacementGroup) Get(context.Context, placementgroup.NodeClass) (*placementgroup.PlacementGroup, error) {
	return nil, nil
}

type noAMIs struct{ amifamily.Provider }

func (noAMIs) List(context.Context, *awsv1.EC2NodeClass) (amifamily.AMIs, error) {
	return nil, unsupported("AMI discovery (give the EC2NodeClass status.amis)")
}

type noSecurityGroups struct{ securitygroup.Provider }

func (noSecurityGroups) List(context.Context, *awsv1.EC2NodeClass) ([]ec2types.SecurityGroup, error) {
	return nil, unsupported("security group discovery (give the EC2NodeClass status.securityGroups)")
}

type noCapacityReservations struct{ capacityreservation.Provider }

func (noCapacityReservations) List(context.Context, ...awsv1.CapacityReservationSelectorTerm) ([]*ec2types.CapacityReservation, error) {
	return nil, unsupported("capacity reservations")
}

// kubeClient is a client holding objects, as Karpenter reads them from the API server.
func kubeClient(objects ...client.Object) client.Client {
	return fake.NewClientBuilder().
		WithScheme(scheme.Scheme).
		WithObjects(objects...).
		WithStatusSubresource(&karpv1.NodeClaim{}, &karpv1.NodePool{}).
		Build()
}

// awsCloudProvider is the AWS provider's CloudProvider over the given instance types and
// instance, reading NodePools and EC2NodeClasses from kube.
func awsCloudProvider(kube client.Client, types []*cloudprovider.InstanceType, inst *instance.Instance, caBundle *string) *awscloudprovider.CloudProvider {
	return awscloudprovider.New(
		givenInstanceTypes{types: types},
		givenInstance{instance: inst},
		recorder(),
		kube,
		noAMIs{},
		noSecurityGroups{},
		noCapacityReservations{},
		noPlacementGroup{},
		nodeoverlay.NewInstanceTypeStore(),
		caBundle,
	)
}

func recorder() events.Recorder {
	return events.NewRecorder(&record.FakeRecorder{})
}
