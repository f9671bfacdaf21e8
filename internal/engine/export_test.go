package engine

// CgroupDirs is where a reader reads: each v1 controller's directory, or
// v2's one ("unified"). The engine's tests read the same files the plain
// way.
func CgroupDirs(r *CgroupReader) map[string]string {
	out := make(map[string]string, len(r.dirs))
	for k, v := range r.dirs {
		out[k] = v
	}
	return out
}

// EngineSocket is the local engine's socket whose peer EnginePids takes
// for dockerd, and SocketPeer that lookup.
func EngineSocket(h HostInfo) string { return h.socket }

var SocketPeer = socketPeer

// StatTimes is a /proc/<pid>/stat line's CPU time, as the engine's
// processes are read at each tick.
var StatTimes = statTimes
