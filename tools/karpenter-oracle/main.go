// Command karpenter-oracle answers questions about Karpenter's behaviour with Karpenter's
// own code, for driftwave's differential tests and scheduling benchmark.
//
// It reads newline-delimited JSON requests on stdin and writes one JSON answer line per
// request on stdout, so one process can serve a whole test session. Every request names
// an "op":
//
//	nodepool-hash        the NodePool hash and hash version Karpenter stamps
//	ec2nodeclass-hash    the EC2NodeClass hash and hash version the AWS provider stamps
//	allowed-disruptions  how many of a NodePool's nodes its budgets let be disrupted
//	schedule             the NodeClaims Karpenter's provisioning scheduler plans for pods
//	drift                Karpenter's drift reason for a launched NodeClaim
//
// Objects are given as Karpenter's own JSON (karpenter.sh/v1, karpenter.k8s.aws/v1,
// core/v1 Pod) and are defaulted by the CRDs' schemas as the API server stores them. A
// request that cannot be answered gets {"error": "..."}; the process keeps serving.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// handler answers one op's request (its raw JSON) with a value to encode.
type handler func(ctx context.Context, raw json.RawMessage) (any, error)

var handlers = map[string]handler{
	"nodepool-hash":       nodePoolHash,
	"ec2nodeclass-hash":   ec2NodeClassHash,
	"allowed-disruptions": allowedDisruptions,
	"schedule":            schedule,
	"drift":               drift,
}

func main() {
	// Karpenter logs through controller-runtime and klog; answers own stdout.
	ctrllog.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	ctx := ctrllog.IntoContext(context.Background(), logr.Discard())
	if err := serve(ctx, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "karpenter-oracle:", err)
		os.Exit(1)
	}
}

// serve answers every request line of in on out until in ends.
func serve(ctx context.Context, in io.Reader, out io.Writer) error {
	reader := bufio.NewReaderSize(in, 1<<20)
	writer := bufio.NewWriter(out)
	for {
		line, err := reader.ReadBytes('\n')
		if len(line) > 0 && !blank(line) {
			if werr := writeAnswer(writer, answer(ctx, line)); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading requests: %w", err)
		}
	}
}

func blank(line []byte) bool {
	for _, b := range line {
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			return false
		}
	}
	return true
}

func writeAnswer(w *bufio.Writer, value any) error {
	data, err := json.Marshal(value)
	if err != nil {
		data, _ = json.Marshal(errorAnswer(fmt.Errorf("encoding the answer: %w", err)))
	}
	if _, err := w.Write(append(data, '\n')); err != nil {
		return err
	}
	return w.Flush()
}

// answer runs one request; a panic in Karpenter's code becomes an error answer.
func answer(ctx context.Context, line []byte) (result any) {
	defer func() {
		if r := recover(); r != nil {
			result = errorAnswer(fmt.Errorf("panic: %v\n%s", r, debug.Stack()))
		}
	}()
	var envelope struct {
		Op string `json:"op"`
	}
	if err := json.Unmarshal(line, &envelope); err != nil {
		return errorAnswer(fmt.Errorf("reading the request: %w", err))
	}
	handle, ok := handlers[envelope.Op]
	if !ok {
		return errorAnswer(fmt.Errorf("unknown op %q", envelope.Op))
	}
	value, err := handle(ctx, line)
	if err != nil {
		return errorAnswer(fmt.Errorf("%s: %w", envelope.Op, err))
	}
	return value
}

func errorAnswer(err error) map[string]string {
	return map[string]string{"error": err.Error()}
}
