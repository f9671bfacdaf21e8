package kube

import (
	"context"
	"errors"
	"fmt"

	"github.com/limitlab/limitlab/internal/engine"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	networkingv1 "k8s.io/api/networking/v1"
)

// Each run has a NetworkPolicy of its own while it runs: its lanes may
// reach each other (a load its service) and nothing else, and nothing
// else may reach them. deploy/kubernetes/networkpolicy.yaml isolates
// every lane pod otherwise. Where the cluster's network plugin does not
// enforce NetworkPolicy, the policy is kept and does nothing.

// policyName is the name of a run's NetworkPolicy.
func policyName(runID string) string { return "limitlab-run-" + runID }

// RunPolicy is the NetworkPolicy of a run's lanes.
func RunPolicy(instance, runID string) *networkingv1.NetworkPolicy {
	own := metav1.LabelSelector{MatchLabels: map[string]string{engine.LabelRun: runID}}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName(runID),
			Labels: map[string]string{engine.LabelRun: runID, engine.LabelInstance: instance}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: own,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &own}}}},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &own}}}},
		},
	}
}

// isolate gives a run its NetworkPolicy.
func isolate(ctx context.Context, c *client, runID string) error {
	_, err := c.cs.NetworkingV1().NetworkPolicies(c.cfg.Namespace).Create(ctx, RunPolicy(c.cfg.Instance, runID), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kube: run %s's network policy: %w", runID, err)
	}
	return nil
}

// unisolate deletes a run's NetworkPolicy.
func unisolate(ctx context.Context, c *client, runID string) error {
	sel := engine.LabelInstance + "=" + c.cfg.Instance + "," + engine.LabelRun + "=" + runID
	list, err := c.cs.NetworkingV1().NetworkPolicies(c.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("kube: list network policies %s: %w", sel, err)
	}
	var errs []error
	for _, p := range list.Items {
		if err := c.cs.NetworkingV1().NetworkPolicies(c.cfg.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
