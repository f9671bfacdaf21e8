package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// scrapes is how many times a scrape burst asks for /metrics: enough CPU
// to count in ticks of 10 ms.
const scrapes = 400

// scrapeEvery is Prometheus' usual scrape interval, at which the cost is
// reported.
const scrapeEvery = 15 * time.Second

// scrapeCost is what a burst of scrapes of /metrics cost the server, over
// what it spent sampling meanwhile at the window's rate.
type scrapeCost struct {
	ticks   int64         // the server's ticks in the burst
	took    time.Duration // the burst's length
	series  int           // lines of the last scrape
	baseTPS float64       // the server's ticks a second while it only sampled
}

// perScrape is one scrape's CPU, in milliseconds.
func (s scrapeCost) perScrape() float64 {
	extra := float64(s.ticks) - s.baseTPS*s.took.Seconds()
	return max(extra, 0) * 10 / scrapes
}

// shareAt15s is one scrape every 15 s as a share of the server's own CPU
// over those 15 s.
func (s scrapeCost) shareAt15s() float64 {
	if s.baseTPS <= 0 {
		return 0
	}
	return s.perScrape() / 10 / (s.baseTPS * scrapeEvery.Seconds())
}

// scrapeBurst asks the server at base for /metrics scrapes times in a
// row while its run samples, and counts its ticks.
func scrapeBurst(ctx context.Context, base string, pid int, baseTPS float64) (scrapeCost, error) {
	c := scrapeCost{baseTPS: baseTPS}
	before := snapshot(pid)[pid].ticks
	start := time.Now()
	for range scrapes {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return c, err
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return c, fmt.Errorf("/metrics: %d", res.StatusCode)
		}
		c.series = 0
		for _, ch := range b {
			if ch == '\n' {
				c.series++
			}
		}
	}
	c.took = time.Since(start)
	c.ticks = snapshot(pid)[pid].ticks - before
	return c, nil
}
