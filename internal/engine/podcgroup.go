package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	// PodUID matches a pod's uid as the API server makes it.
	PodUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	// ContainerID matches a container's full id, as Docker and
	// containerd make it.
	ContainerID = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// podCgroupPaths are where kubelet puts a pod's container's cgroup,
// relative to a hierarchy's root: the cgroupfs layout of each QoS class,
// then the systemd one.
func podCgroupPaths(uid, cid string) []string {
	var out []string
	for _, q := range []string{"", "burstable/", "besteffort/"} {
		out = append(out, filepath.Join("kubepods", q+"pod"+uid, cid))
	}
	su := strings.ReplaceAll(uid, "-", "_")
	for _, q := range []string{"", "burstable", "besteffort"} {
		slice, pod := "kubepods.slice", "kubepods-pod"+su+".slice"
		if q != "" {
			slice = filepath.Join(slice, "kubepods-"+q+".slice")
			pod = "kubepods-" + q + "-pod" + su + ".slice"
		}
		out = append(out, filepath.Join(slice, pod, "cri-containerd-"+cid+".scope"))
	}
	return out
}

// FindPodCgroup locates a pod's container's cgroup under root by the
// pod's uid and the container's id, where kubelet puts it, without its
// process: a sampler beside the node needs no host pid namespace.
func FindPodCgroup(root, uid, cid string) (*CgroupReader, error) {
	if !PodUID.MatchString(uid) || !ContainerID.MatchString(cid) {
		return nil, fmt.Errorf("engine: pod %.36q container %.64q: not a pod uid and a container id", uid, cid)
	}
	v2 := fileExists(filepath.Join(root, "cgroup.controllers"))
	r := &CgroupReader{v2: v2, root: root, dirs: map[string]string{}, files: map[[2]string]openFile{}}
	paths := podCgroupPaths(uid, cid)
	if v2 {
		for _, rel := range paths {
			if d := filepath.Join(root, rel); fileExists(filepath.Join(d, "cpu.stat")) {
				r.dirs["unified"], r.outer = d, filepath.Dir(d)
				return r, nil
			}
		}
		return nil, fmt.Errorf("engine: no cgroup of pod %s's container %.12s under %s", uid, cid, root)
	}
	for _, c := range append(slices.Clone(v1Controllers), v1Optional...) {
		for _, rel := range paths {
			if d := filepath.Join(root, c, rel); fileExists(d) {
				r.dirs[c] = d
				break
			}
		}
		if r.dirs[c] == "" && slices.Contains(v1Controllers, c) {
			return nil, fmt.Errorf("engine: no %s cgroup of pod %s's container %.12s under %s", c, uid, cid, root)
		}
	}
	r.outer = filepath.Dir(r.dirs["cpu"])
	return r, nil
}

// PodPid is the first process of a pod's container, found through its
// cgroup under root; 0 when not seen.
func PodPid(root, uid, cid string) int {
	cg, err := FindPodCgroup(root, uid, cid)
	if err != nil {
		return 0
	}
	defer cg.Close()
	dir := cg.dirs["unified"]
	if !cg.v2 {
		dir = cg.dirs["cpu"]
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return 0
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		pid, _ := strconv.Atoi(f[0])
		return pid
	}
	return 0
}
