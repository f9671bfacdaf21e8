package web

import (
	"math"
	"strconv"

	"github.com/limitlab/limitlab/internal/experiments/finder"
	"github.com/limitlab/limitlab/internal/workshop"
)

// findPlot is a search's chart: each probe run's p99 against its limit, in
// an SVG of plotW × plotH units, the target's p99 as a line across, the
// model's floor and the answer as lines up; p99s above the top are drawn
// at the top, marked.
type findPlot struct {
	Points          []findPoint
	TargetY         string
	FloorX, AnswerX string // "" when there is none
	XTicks, YTicks  []findTick
	Top             float64
}

type findPoint struct {
	X, Y    string
	Meets   bool
	Clipped bool
	Title   string
}

type findTick struct{ At, Label string }

const (
	plotW, plotH = 600.0, 240.0
)

func plotOfSearch(v workshop.SearchView) findPlot {
	top := niceCeil(2 * v.Spec.Target.P99Ms)
	span := v.Max - v.Min
	x := func(limit float64) float64 { return (limit - v.Min) / span * plotW }
	y := func(ms float64) float64 { return plotH - math.Min(ms, top)/top*plotH }
	p := findPlot{Top: top, TargetY: f1(y(v.Spec.Target.P99Ms))}
	for _, pr := range v.Probes {
		if pr.Result == nil {
			continue
		}
		pt := findPoint{X: f1(x(pr.Limit)), Y: f1(y(pr.Result.P99Ms)), Meets: pr.Meets != nil && *pr.Meets,
			Clipped: pr.Result.P99Ms > top,
			Title:   string(v.Spec.Search.Limit) + " " + pr.Text + ": p99 " + f1(pr.Result.P99Ms) + " ms, throttled " + strconv.FormatFloat(100*pr.Result.Throttled, 'f', 0, 64) + "%"}
		if pr.Result.Died != "" {
			// No latency to draw: it stands above the chart, missed.
			pt.Y, pt.Clipped, pt.Title = f1(y(top)), true, string(v.Spec.Search.Limit)+" "+pr.Text+": "+pr.Result.Died
		}
		p.Points = append(p.Points, pt)
	}
	if v.Needs > v.Min && v.Needs < v.Max && v.Spec.Search.Limit == finder.FindCPUs {
		p.FloorX = f1(x(v.Needs))
	}
	if v.Answer != nil && v.Answer.Found {
		p.AnswerX = f1(x(v.Answer.Limit))
	}
	for k := 0; k <= 4; k++ {
		l := v.Min + span*float64(k)/4
		p.XTicks = append(p.XTicks, findTick{At: f1(x(l)), Label: strconv.FormatFloat(l, 'g', 3, 64)})
		ms := top * float64(k) / 4
		p.YTicks = append(p.YTicks, findTick{At: f1(y(ms)), Label: strconv.FormatFloat(ms, 'g', 3, 64)})
	}
	return p
}

// limitText is a search's limit in the docker CLI's words.
func limitText(v workshop.SearchView, limit float64) string {
	return finder.LimitText(v.Spec.Search.Limit, limit)
}

// loadText is a search's load in words.
func loadText(v workshop.SearchView) string {
	l := v.Spec.Load
	if l.Rate > 0 {
		return f3(l.Rate) + " requests a second (an open loop) for " + f3(l.Seconds) + " s a probe"
	}
	return strconv.Itoa(l.Concurrency) + " clients at once (a closed loop) for " + f3(l.Seconds) + " s a probe"
}
