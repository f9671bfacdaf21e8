// Package kube runs a run's lanes as pods on a Kubernetes cluster, through
// client-go: one pod per lane, built by the server from validated fields
// only, hardened as the Docker engine's containers are, labelled with the
// run and the server's instance, and reaped like them. It implements the
// runner's Backend beside engine.Docker and knows nothing of queues or
// pages.
package kube

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Container is the name of a lane pod's one container.
const Container = specs.PodContainer

// nobody is the workload's user and group, as in the Docker image.
const nobody = 65534

// gracePeriod is how long a lane asked to stop has before it is killed:
// the workload prints its summary on SIGTERM and exits at once.
const gracePeriod = 5

// The local storage a lane's pod may use beside its disk workload's file:
// its logs and the data volume's slack. Its root is read-only.
const ephemeralStorage = 64 << 20

// deadlineSlack is how long past its run's duration a pod may last before
// kubelet ends it: the runner stops the run at its duration, so only a
// pod whose server is gone meets this deadline.
const deadlineSlack = 2 * time.Minute

// Placement is where a lane's pod may go: the node its run took (none:
// any the scheduler picks), and the keys of the taints, besides the
// server's own, that the facilitator let lanes tolerate
// (-kube-tolerate).
type Placement struct {
	Node     string
	Tolerate []string
}

// affinity requires the node by name. The scheduler places the pod, so
// that every taint of the node that the pod does not tolerate keeps it
// off, as it keeps any pod off: nodeName would bypass the scheduler and
// every NoSchedule taint with it.
func (pl Placement) affinity() *corev1.Affinity {
	if pl.Node == "" {
		return nil
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{pl.Node}}},
		}}},
	}}
}

// tolerations are the run's own mark on its node, and the taints the
// facilitator named.
func (pl Placement) tolerations(runID string) []corev1.Toleration {
	ts := []corev1.Toleration{toleration(runID)}
	for _, k := range pl.Tolerate {
		ts = append(ts, corev1.Toleration{Key: k, Operator: corev1.TolerationOpExists})
	}
	return ts
}

// ForeignTaints are the taints of a node that keep pods off it (NoSchedule,
// NoExecute) and that are neither a Limit Lab run's mark nor among the
// keys tolerated: a node with any is no place for lanes. The node's own
// conditions (node.kubernetes.io/not-ready, unschedulable, …) are not
// another's: the probe's Ready and cordon checks say what they mean, and
// the scheduler waits them out.
func ForeignTaints(n corev1.Node, tolerate []string) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		if t.Key == TaintRun || t.Effect == corev1.TaintEffectPreferNoSchedule || slices.Contains(tolerate, t.Key) ||
			strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			continue
		}
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}

// PodSpec builds lane i's pod. Every field comes from the plan; args are
// the workload's command line (a load lane's with its service's address).
// The pod is placed by the scheduler on the placement's node, never restarts, runs as nobody on a read-only root
// without capabilities, privilege escalation, host namespaces or a
// service-account token, under the runtime's seccomp profile: the
// restricted Pod Security Standard. Its local storage is bounded (an
// ephemeral-storage limit, a size on every emptyDir) and so is its life
// (activeDeadlineSeconds, from the run's duration).
func PodSpec(nl engine.NewLane, pl Placement, args []string) *corev1.Pod {
	l := nl.Lane
	yes, no := true, false
	user := int64(nobody)
	grace := int64(gracePeriod)
	mounts := []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}
	tmpSize := resource.MustParse("16Mi")
	volumes := []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &tmpSize}}}}
	storage := int64(ephemeralStorage)
	if l.Workload.Disk() {
		// A disk of the node's for the disk workloads, gone with the pod,
		// as large as the workload's file and the slack.
		dataSize := resource.NewQuantity(int64(l.Workload.MB)<<20+ephemeralStorage, resource.BinarySI)
		storage += dataSize.Value()
		mounts = append(mounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
		volumes = append(volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: dataSize}}})
	}
	resources := Requirements(*l.Pod)
	if resources.Limits == nil {
		resources.Limits = corev1.ResourceList{}
	}
	resources.Limits[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(storage, resource.BinarySI)
	var deadline *int64
	if nl.Deadline > 0 {
		d := int64((nl.Deadline + deadlineSlack) / time.Second)
		deadline = &d
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   engine.ContainerName(nl.RunID, nl.Index),
			Labels: Labels(nl.Instance, nl.RunID, nl.Index),
		},
		Spec: corev1.PodSpec{
			Affinity:                      pl.affinity(),
			Tolerations:                   pl.tolerations(nl.RunID),
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         deadline,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: &yes, RunAsUser: &user, RunAsGroup: &user, FSGroup: &user,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            Container,
				Image:           nl.Image,
				ImagePullPolicy: pullPolicy(nl.Image),
				Args:            args,
				Resources:       resources,
				ResizePolicy:    resizePolicy,
				VolumeMounts:    mounts,
				SecurityContext: &corev1.SecurityContext{
					Privileged: &no, AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Volumes: volumes,
		},
	}
}

// Requirements are a lane's resources as a container's. Requests equal to
// their limits are left to the API server's defaulting, as people write
// them.
func Requirements(p specs.Pod) corev1.ResourceRequirements {
	var r corev1.ResourceRequirements
	set := func(list *corev1.ResourceList, name corev1.ResourceName, q *resource.Quantity) {
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[name] = *q
	}
	if p.LimitMilliCPU > 0 {
		set(&r.Limits, corev1.ResourceCPU, resource.NewMilliQuantity(p.LimitMilliCPU, resource.DecimalSI))
	}
	if p.LimitMemory > 0 {
		set(&r.Limits, corev1.ResourceMemory, resource.NewQuantity(p.LimitMemory, resource.BinarySI))
	}
	if p.RequestMilliCPU > 0 && p.RequestMilliCPU != p.LimitMilliCPU {
		set(&r.Requests, corev1.ResourceCPU, resource.NewMilliQuantity(p.RequestMilliCPU, resource.DecimalSI))
	}
	if p.RequestMemory > 0 && p.RequestMemory != p.LimitMemory {
		set(&r.Requests, corev1.ResourceMemory, resource.NewQuantity(p.RequestMemory, resource.BinarySI))
	}
	return r
}

// Labels mark a lane's pod as the run's and the server's.
func Labels(instance, runID string, lane int) map[string]string {
	l := map[string]string{engine.LabelRun: runID, engine.LabelLane: strconv.Itoa(lane)}
	if instance != "" {
		l[engine.LabelInstance] = instance
	}
	return l
}

// YAML is the pod as kubectl apply would take it: what the server asks
// for, without the status and defaults the API server adds.
//
// The pod is shown as a person would apply it: without the labels that
// make it this server's (a server reaps the pods it labelled) and without
// the toleration of its run's mark on the node.
func YAML(p *corev1.Pod) string {
	p = p.DeepCopy()
	for k := range p.Labels {
		if strings.HasPrefix(k, "io.limitlab.") {
			delete(p.Labels, k)
		}
	}
	p.Spec.Tolerations = slices.DeleteFunc(p.Spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == TaintRun })
	b, err := yaml.Marshal(p)
	if err != nil {
		return ""
	}
	return string(b)
}

// pullPolicy is Never for the image this server wrote, which is imported
// on the nodes and in no registry, and IfNotPresent for one a registry
// serves (-kube-image): a tag of a release names one build.
func pullPolicy(image string) corev1.PullPolicy {
	if engine.Pulled(image) {
		return corev1.PullIfNotPresent
	}
	return corev1.PullNever
}
