package web

import (
	"math"
	"strconv"

	"github.com/limitlab/limitlab/internal/workshop"
)

// seriesPlot draws a series' runs lane by lane on one axis from zero:
// each run a point, the mean a mark, one standard deviation either side a
// band.
type seriesPlot struct {
	Rows  []seriesPlotRow
	Ticks []timelineTick
}

type seriesPlotRow struct {
	Lane               int
	Name               string
	Points             []plotPoint
	Mean, BandX, BandW string
	MeanText           string
	HasBand            bool
}

type plotPoint struct{ X, Title string }

// niceCeil is the smallest of 1, 2 or 5 times a power of ten at or above x.
func niceCeil(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func plotOfSeries(s workshop.SeriesView) seriesPlot {
	top := 0.0
	for _, l := range s.Lanes {
		for _, v := range l.Values {
			top = max(top, v)
		}
	}
	top = niceCeil(top)
	var out seriesPlot
	at := func(v float64) string { return pct(min(max(v, 0), top) / top) }
	for i, l := range s.Lanes {
		row := seriesPlotRow{Lane: i, Name: l.Name}
		for k, v := range l.Values {
			row.Points = append(row.Points, plotPoint{X: at(v), Title: "run " + strconv.Itoa(k+1) + ": " + f3(v) + " " + s.Unit})
		}
		if l.Stats.N > 0 {
			row.Mean, row.MeanText = at(l.Stats.Mean), "mean "+f3(l.Stats.Mean)+" "+s.Unit
			lo, hi := max(l.Stats.Mean-l.Stats.SD, 0), min(l.Stats.Mean+l.Stats.SD, top)
			row.BandX, row.BandW, row.HasBand = at(lo), pct((hi-lo)/top), l.Stats.SD > 0
			row.MeanText += ", SD " + f3(l.Stats.SD)
		}
		out.Rows = append(out.Rows, row)
	}
	for k := 0; k <= 4; k++ {
		v := top * float64(k) / 4
		out.Ticks = append(out.Ticks, timelineTick{X: pct(v / top), Label: strconv.FormatFloat(v, 'g', 3, 64)})
	}
	return out
}
