package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUTimes is a reading of the machine's CPU counters from /proc/stat, in
// clock ticks summed over every core.
type CPUTimes struct {
	Busy  uint64 // user, nice, system, irq, softirq and steal
	Total uint64 // Busy plus idle and iowait
	Cores int
}

// ReadCPUTimes reads /proc/stat. It fails where there is none (not Linux).
func ReadCPUTimes() (CPUTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, err
	}
	return parseCPUTimes(b)
}

// parseCPUTimes reads the aggregate "cpu" line and counts the "cpuN" lines.
func parseCPUTimes(b []byte) (CPUTimes, error) {
	var t CPUTimes
	seen := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "cpu") {
			continue
		}
		if fields[0] != "cpu" {
			t.Cores++
			continue
		}
		if len(fields) < 9 {
			return CPUTimes{}, fmt.Errorf("/proc/stat: cpu line has %d fields, want at least 9", len(fields))
		}
		var v [8]uint64
		for i := range v {
			n, err := strconv.ParseUint(fields[i+1], 10, 64)
			if err != nil {
				return CPUTimes{}, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			v[i] = n
		}
		// user nice system idle iowait irq softirq steal
		t.Busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
		t.Total = t.Busy + v[3] + v[4]
		seen = true
	}
	if !seen {
		return CPUTimes{}, fmt.Errorf("/proc/stat: no aggregate cpu line")
	}
	return t, nil
}

// BusyCoresSince is how many cores were busy on average between the reading
// start and now: 2 means two cores' worth of work, whichever process did it.
func (start CPUTimes) BusyCoresSince(now CPUTimes) float64 {
	total := now.Total - start.Total
	if total == 0 || now.Total < start.Total {
		return 0
	}
	return float64(now.Busy-start.Busy) / float64(total) * float64(now.Cores)
}

// MeasureBusyCores runs fn and returns how long it took and how many cores
// were busy on average meanwhile, by every process (0 where /proc/stat
// cannot be read).
func MeasureBusyCores(fn func()) (elapsed time.Duration, busyCores float64) {
	before, beforeErr := ReadCPUTimes()
	start := time.Now()
	fn()
	elapsed = time.Since(start)
	if beforeErr != nil {
		return elapsed, 0
	}
	after, err := ReadCPUTimes()
	if err != nil {
		return elapsed, 0
	}
	return elapsed, before.BusyCoresSince(after)
}
