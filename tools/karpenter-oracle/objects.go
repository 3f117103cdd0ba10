// Objects: reading requests and Karpenter's objects from JSON, defaulted as the API server
// stores them.
//
// The API server fills in the defaults of a custom resource's schema before Karpenter
// ever reads it, and those defaults matter here (they are hashed, budgets default to 10%,
// expireAfter to 720h). So every NodePool, NodeClaim and EC2NodeClass is defaulted with the
// schema of the CRDs Karpenter's AWS provider ships, by the API server's own defaulting
// code, before it is decoded into Karpenter's types. Unknown fields are errors, so a typo
// in a test's object is reported rather than silently dropped.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	awsapis "github.com/aws/karpenter-provider-aws/pkg/apis"
	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

var (
	schemasOnce sync.Once
	schemas     map[string]*structuralschema.Structural // by kind
	schemasErr  error
)

// schemaOf is the structural schema of the v1 version of the CRD of kind.
func schemaOf(kind string) (*structuralschema.Structural, error) {
	schemasOnce.Do(func() {
		schemas = map[string]*structuralschema.Structural{}
		for _, crd := range awsapis.CRDs {
			for _, version := range crd.Spec.Versions {
				if version.Name != "v1" || version.Schema == nil {
					continue
				}
				internal := &apiextensions.JSONSchemaProps{}
				err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(version.Schema.OpenAPIV3Schema, internal, nil)
				if err != nil {
					schemasErr = fmt.Errorf("converting the %s schema: %w", crd.Spec.Names.Kind, err)
					return
				}
				structural, err := structuralschema.NewStructural(internal)
				if err != nil {
					schemasErr = fmt.Errorf("reading the %s schema: %w", crd.Spec.Names.Kind, err)
					return
				}
				schemas[crd.Spec.Names.Kind] = structural
			}
		}
	})
	if schemasErr != nil {
		return nil, schemasErr
	}
	schema, ok := schemas[kind]
	if !ok {
		return nil, fmt.Errorf("no CRD schema for %s", kind)
	}
	return schema, nil
}

// strict decodes data into out, refusing unknown fields.
func strict(data []byte, out any) error {
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	return decoder.Decode(out)
}

// defaulted decodes raw as an object of kind into out after filling in its CRD's defaults.
func defaulted(kind string, raw json.RawMessage, out any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return fmt.Errorf("a %s is required", kind)
	}
	var object map[string]any
	if err := json.Unmarshal(raw, &object); err != nil {
		return fmt.Errorf("reading the %s: %w", kind, err)
	}
	schema, err := schemaOf(kind)
	if err != nil {
		return err
	}
	defaulting.Default(object, schema)
	data, err := json.Marshal(object)
	if err != nil {
		return err
	}
	if err := strict(data, out); err != nil {
		return fmt.Errorf("reading the %s: %w", kind, err)
	}
	return nil
}

func readNodePool(raw json.RawMessage) (*karpv1.NodePool, error) {
	pool := &karpv1.NodePool{}
	return pool, defaulted("NodePool", raw, pool)
}

func readNodeClaim(raw json.RawMessage) (*karpv1.NodeClaim, error) {
	claim := &karpv1.NodeClaim{}
	return claim, defaulted("NodeClaim", raw, claim)
}

func readEC2NodeClass(raw json.RawMessage) (*awsv1.EC2NodeClass, error) {
	nodeClass := &awsv1.EC2NodeClass{}
	return nodeClass, defaulted("EC2NodeClass", raw, nodeClass)
}

// readPod decodes a core/v1 Pod (core types have no CRD defaults to apply).
func readPod(raw json.RawMessage) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	if err := strict(raw, pod); err != nil {
		return nil, fmt.Errorf("reading a Pod: %w", err)
	}
	return pod, nil
}

// readRequest decodes a whole request line into req, refusing unknown fields.
func readRequest(raw json.RawMessage, req any) error {
	if err := strict(raw, req); err != nil {
		return fmt.Errorf("reading the request: %w", err)
	}
	return nil
}
