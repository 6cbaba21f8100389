// Package workflow is an example Loom application: a support desk built as
// a graph workflow.
//
// The classify node routes each message. A question goes to an LLM agent
// node, whose answer ends the run. A refund request fans out to two nodes
// that run concurrently, lookup_order (which fails on its first attempt and
// succeeds on its retry, as a flaky backend would) and check_policy; the
// join collects both; approve asks a person with an adk_request_input call
// and pauses the invocation until the answer comes; settle replies.
//
// [Offline] returns a scripted model for the LLM node.
package workflow

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/examples/internal/offline"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
)

// Name is the name of the root workflow.
const Name = "support_desk"

// Order is what lookup_order finds.
type Order struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
}

// Policy is what check_policy decides.
type Policy struct {
	Refundable bool   `json:"refundable"`
	Reason     string `json:"reason"`
}

// Facts is the join's output: both branches' outputs by node name.
type Facts struct {
	Order  Order  `json:"lookup_order"`
	Policy Policy `json:"check_policy"`
}

// New returns the support desk workflow, its LLM node answering with llm.
func New(llm model.LLM) (agent.Agent, error) {
	answerer, err := llmagent.New(llmagent.Config{
		Name: "answerer", Description: "Answers general questions.",
		Model:       llm,
		Instruction: "You are a support desk. Answer the customer's question in one or two friendly sentences.",
	})
	if err != nil {
		return nil, err
	}
	classify := graph.Func("classify", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		if offline.HasWord(strings.ToLower(in), "refund", "money", "return") {
			nc.SetRoute("refund")
		} else {
			nc.SetRoute("question")
		}
		return in, nil
	}).With(graph.NodeOptions{Description: "Routes refunds and questions."})

	var mu sync.Mutex
	failed := map[string]bool{} // lookups failing their first attempt, by invocation and path
	lookup := graph.Func("lookup_order", func(_ context.Context, nc *graph.Context, in string) (Order, error) {
		key := nc.Invocation().ID() + "/" + nc.Path()
		mu.Lock()
		first := !failed[key]
		if first {
			failed[key] = true
		} else {
			delete(failed, key) // the retry: done with the key
		}
		mu.Unlock()
		if first {
			return Order{}, fmt.Errorf("order service busy")
		}
		id := "A-1001"
		if n := offline.Numbers(in, 1); len(n) > 0 {
			id = fmt.Sprintf("A-%d", int(n[0]))
		}
		return Order{ID: id, Amount: 42.5}, nil
	}).With(graph.NodeOptions{
		Description: "Finds the order (retried).",
		Retry:       graph.Retry{MaxAttempts: 3, Backoff: 50 * time.Millisecond},
		Timeout:     5 * time.Second,
	})
	policy := graph.Func("check_policy", func(_ context.Context, _ *graph.Context, in string) (Policy, error) {
		return Policy{Refundable: true, Reason: "within 30 days"}, nil
	}).With(graph.NodeOptions{Description: "Checks the refund policy."})
	approve := graph.Func("approve", func(_ context.Context, nc *graph.Context, f Facts) (Facts, error) {
		if !f.Policy.Refundable {
			nc.SetRoute("rejected")
			return f, nil
		}
		resp, err := nc.RequestInput(graph.InputRequest{
			Message: fmt.Sprintf("Refund order %s for $%.2f (%s)? Answer yes or no.", f.Order.ID, f.Order.Amount, f.Policy.Reason),
			Payload: f,
		})
		if err != nil {
			return f, err
		}
		if approved(resp) {
			nc.SetRoute("approved")
		} else {
			nc.SetRoute("rejected")
		}
		return f, nil
	}).With(graph.NodeOptions{Description: "Asks a person to approve the refund."})
	settle := graph.Func("settle", func(_ context.Context, nc *graph.Context, f Facts) (string, error) {
		msg := fmt.Sprintf("Your refund of $%.2f for order %s is on its way.", f.Order.Amount, f.Order.ID)
		nc.State().Set("last_refund", f.Order.ID)
		return msg, nc.Say(msg)
	})
	decline := graph.Func("decline", func(_ context.Context, nc *graph.Context, f Facts) (string, error) {
		msg := fmt.Sprintf("Sorry, order %s cannot be refunded.", f.Order.ID)
		return msg, nc.Say(msg)
	})
	return graph.New(graph.Config{
		Name:        Name,
		Description: "A support desk: routes questions to an agent and refunds through a checked, approved path.",
		Nodes: []*graph.Node{classify, graph.FromAgent(answerer), lookup, policy, graph.Join("facts"),
			approve, settle, decline},
		Edges: []graph.Edge{
			{From: "classify", To: "answerer", Route: "question"},
			{From: "classify", To: "lookup_order", Route: "refund"},
			{From: "classify", To: "check_policy", Route: "refund"},
			{From: "lookup_order", To: "facts"},
			{From: "check_policy", To: "facts"},
			{From: "facts", To: "approve"},
			{From: "approve", To: "settle", Route: "approved"},
			{From: "approve", To: "decline", Route: "rejected"},
		},
	})
}

// approved reads an approval: {"approved": true}, or a text answer
// ({"result": "yes"}, as the dev UI sends plain text).
func approved(resp map[string]any) bool {
	if resp["approved"] == true {
		return true
	}
	s, _ := resp["result"].(string)
	return offline.HasWord(strings.ToLower(s), "yes", "approve", "approved", "ok", "sure")
}

// Offline returns a scripted model for the answerer: a short, friendly
// answer that repeats the question. It is deterministic and safe for
// concurrent use.
func Offline() model.LLM {
	return scripted.New("offline-workflow", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		q := strings.TrimSpace(offline.UserText(req))
		if q == "" {
			return scripted.Text("How can I help?"), nil
		}
		return scripted.Text(fmt.Sprintf("Good question! About %q: our team answers within a day, and the help center has more.", q)), nil
	})
}
