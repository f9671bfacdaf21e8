package engine

import "bytes"

// The cgroup files' formats, parsed without allocating: the readers
// rewind and re-read each file into one buffer per tick.

// atou parses a decimal without allocating.
func atou(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// lines walks b's lines, and fields a line's space-separated fields,
// without allocating.
type lines struct{ b []byte }

func (l *lines) next() ([]byte, bool) {
	if len(l.b) == 0 {
		return nil, false
	}
	line := l.b
	if i := bytes.IndexByte(l.b, '\n'); i >= 0 {
		line, l.b = l.b[:i], l.b[i+1:]
	} else {
		l.b = nil
	}
	return line, true
}

type fields struct{ b []byte }

func (f *fields) next() ([]byte, bool) {
	f.b = bytes.TrimLeft(f.b, " \t")
	if len(f.b) == 0 {
		return nil, false
	}
	w := f.b
	if i := bytes.IndexAny(f.b, " \t"); i >= 0 {
		w, f.b = f.b[:i], f.b[i:]
	} else {
		f.b = nil
	}
	return w, true
}

// kvLines walks "key value" lines, as cpu.stat, memory.stat and
// cpuacct.stat hold them.
type kvLines struct{ ls lines }

// next is the next line's key and numeric value; ok is false at the end.
func (s *kvLines) next() (k []byte, v uint64, ok bool) {
	for {
		line, more := s.ls.next()
		if !more {
			return nil, 0, false
		}
		k, vb, found := bytes.Cut(line, []byte(" "))
		if !found {
			continue
		}
		if n, isNum := atou(bytes.TrimSpace(vb)); isNum {
			return k, n, true
		}
	}
}

// parseBlkioV1 sums a v1 blkio file ("8:0 Read 4096" per line) by op,
// case-insensitively like calculateBlockIO.
func parseBlkioV1(b []byte) (read, write uint64) {
	for ls := (lines{b}); ; {
		line, ok := ls.next()
		if !ok {
			return read, write
		}
		fs := fields{line}
		_, ok1 := fs.next()
		op, ok2 := fs.next()
		num, ok3 := fs.next()
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		n, isNum := atou(num)
		switch {
		case !isNum:
		case bytes.EqualFold(op, []byte("read")):
			read += n
		case bytes.EqualFold(op, []byte("write")):
			write += n
		}
	}
}

// parsePressure reads the "some" line's total of a PSI file
// ("some avg10=0.00 avg60=0.00 avg300=0.00 total=12345"), in microseconds.
func parsePressure(b []byte) (uint64, bool) {
	for ls := (lines{b}); ; {
		line, ok := ls.next()
		if !ok {
			return 0, false
		}
		fs := fields{line}
		if first, _ := fs.next(); string(first) != "some" {
			continue
		}
		for {
			w, ok := fs.next()
			if !ok {
				break
			}
			if v, found := bytes.CutPrefix(w, []byte("total=")); found {
				return atou(v)
			}
		}
	}
}

// parseIOStatV2 sums a v2 io.stat file
// ("8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0" per device).
func parseIOStatV2(b []byte) (rbytes, wbytes, rios, wios uint64) {
	for ls := (lines{b}); ; {
		line, ok := ls.next()
		if !ok {
			return
		}
		for fs := (fields{line}); ; {
			w, ok := fs.next()
			if !ok {
				break
			}
			k, v, found := bytes.Cut(w, []byte("="))
			n, isNum := atou(v)
			if !found || !isNum {
				continue
			}
			switch string(k) {
			case "rbytes":
				rbytes += n
			case "wbytes":
				wbytes += n
			case "rios":
				rios += n
			case "wios":
				wios += n
			}
		}
	}
}
