package web

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Charts are laid out here, in Go, and drawn as inline SVG by templ
// components: no chart library and no JavaScript. Every chart has a fixed
// viewBox and scales with its container; its strokes and text use
// currentColor and CSS classes (static/css/breakdowns.css), so one drawing
// reads in light and dark mode.

// linearScale maps the domain [d0, d1] onto the pixel range [r0, r1].
type linearScale struct{ d0, d1, r0, r1 float64 }

// at returns the pixel position of v; the middle of the range when the
// domain is a single value.
func (s linearScale) at(v float64) float64 {
	if s.d1 == s.d0 {
		return (s.r0 + s.r1) / 2
	}
	return s.r0 + (v-s.d0)/(s.d1-s.d0)*(s.r1-s.r0)
}

// niceStep returns a round step (1, 2 or 5 times a power of ten) that cuts
// span into about n intervals.
func niceStep(span float64, n int) float64 {
	if span <= 0 || n < 1 || math.IsNaN(span) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch norm := raw / mag; {
	case norm <= 1:
		return mag
	case norm <= 2:
		return 2 * mag
	case norm <= 5:
		return 5 * mag
	}
	return 10 * mag
}

// niceTicks returns about n+1 round tick values from a multiple of the step
// at or below lo to one at or above hi, and the step. An empty span (lo ==
// hi) is widened to [lo, lo+1] so that a single value still gets an axis.
func niceTicks(lo, hi float64, n int) ([]float64, float64) {
	if hi < lo {
		lo, hi = hi, lo
	}
	if hi == lo {
		hi = lo + 1
	}
	step := niceStep(hi-lo, n)
	first, last := math.Floor(lo/step+1e-9), math.Ceil(hi/step-1e-9)
	ticks := make([]float64, 0, int(last-first)+1)
	for i := first; i <= last; i++ {
		// Rounded so that 3 × 0.1 is 0.3 and labels and golden files are stable.
		ticks = append(ticks, math.Round(i*step*1e9)/1e9)
	}
	return ticks, step
}

// decimalsFor is how many decimals tick labels need to tell steps apart.
func decimalsFor(step float64) int {
	if step <= 0 || step >= 1 {
		return 0
	}
	return int(math.Ceil(-math.Log10(step) - 1e-9))
}

// svgNum formats a coordinate with one decimal, enough for a 640-pixel chart.
func svgNum(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// shorten cuts a label to max characters with an ellipsis.
func shorten(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:max-1])) + "…"
}

// chartTick is one labelled mark on an axis, Pos pixels along it.
type chartTick struct {
	Pos   float64
	Label string
}

// chartAxis is an axis's title and ticks.
type chartAxis struct {
	Label string
	Ticks []chartTick
}

// plotBox is the drawing area inside a chart's margins.
type plotBox struct{ Left, Top, Right, Bottom float64 }

// Width and Height are the plot area's size.
func (b plotBox) Width() float64  { return b.Right - b.Left }
func (b plotBox) Height() float64 { return b.Bottom - b.Top }

// axisTicks places values along a scale with labels from format.
func axisTicks(values []float64, s linearScale, format func(float64) string) []chartTick {
	ticks := make([]chartTick, len(values))
	for i, v := range values {
		ticks[i] = chartTick{Pos: s.at(v), Label: format(v)}
	}
	return ticks
}

// percentLabel labels a rate tick: 0.4 is "40%".
func percentLabel(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }

// numberLabel returns a tick formatter with the decimals a step needs and a
// prefix, such as "$".
func numberLabel(step float64, prefix string) func(float64) string {
	d := decimalsFor(step)
	return func(v float64) string { return prefix + strconv.FormatFloat(v, 'f', d, 64) }
}

// scatterPoint is one entry on a scatter chart: X and Y in data units, a
// short label drawn next to frontier points and a title shown on hover.
type scatterPoint struct {
	X, Y  float64
	Label string
	Title string
}

// scatterSpec describes a scatter chart of rates (Y, 0–100%) against a
// non-negative quantity (X) such as cost or steps.
type scatterSpec struct {
	ID, Title, Desc string
	XLabel, YLabel  string
	// XPrefix goes before X tick labels ("$" for costs).
	XPrefix string
	Points  []scatterPoint
	// Frontier marks the Pareto frontier: the points no other point beats
	// on both axes (lower X and higher Y), drawn as a staircase.
	Frontier []int
}

// placedPoint is a scatter point in pixels.
type placedPoint struct {
	CX, CY     float64
	Title      string
	OnFrontier bool
	// Label is drawn at LabelX, LabelY with the given text anchor; "" for none.
	Label          string
	LabelX, LabelY float64
	Anchor         string
}

// scatterChart is a laid-out scatter chart.
type scatterChart struct {
	ID, Title, Desc string
	Width, Height   float64
	Plot            plotBox
	X, Y            chartAxis
	Points          []placedPoint
	// FrontierPath is the SVG path of the frontier staircase, "" without one.
	FrontierPath string
}

// Empty reports whether the chart has nothing to draw.
func (c scatterChart) Empty() bool { return len(c.Points) == 0 }

// Scatter chart geometry, in viewBox units.
const (
	scatterWidth  = 568
	scatterHeight = 360
	pointLabel    = 24 // characters of a point's label
	// labelAllUpTo is how many points a chart labels all of; above it only
	// the frontier's points are labelled, and the rest keep their titles.
	labelAllUpTo = 10
)

// layoutScatter places a scatter chart's axes, points and frontier. The Y
// axis always spans 0–100%; the X axis starts at 0 and ends at a round value
// past the largest X. Points with a NaN or infinite coordinate are left out.
// Up to labelAllUpTo points are all labelled; beyond, only frontier points.
func layoutScatter(spec scatterSpec) scatterChart {
	c := scatterChart{
		ID: spec.ID, Title: spec.Title, Desc: spec.Desc, Width: scatterWidth, Height: scatterHeight,
		Plot: plotBox{Left: 64, Top: 16, Right: scatterWidth - 24, Bottom: scatterHeight - 56},
		X:    chartAxis{Label: spec.XLabel}, Y: chartAxis{Label: spec.YLabel},
	}
	maxX, placeable := 0.0, 0
	for _, p := range spec.Points {
		if finite(p.X) && finite(p.Y) {
			maxX = max(maxX, p.X)
			placeable++
		}
	}
	// A little room past the largest X keeps its point off the plot's edge.
	xTicks, xStep := niceTicks(0, maxX*1.05, 5)
	xs := linearScale{d0: xTicks[0], d1: xTicks[len(xTicks)-1], r0: c.Plot.Left, r1: c.Plot.Right}
	yTicks, _ := niceTicks(0, 1, 5)
	ys := linearScale{d0: 0, d1: 1, r0: c.Plot.Bottom, r1: c.Plot.Top}
	c.X.Ticks = axisTicks(xTicks, xs, numberLabel(xStep, spec.XPrefix))
	c.Y.Ticks = axisTicks(yTicks, ys, percentLabel)

	on := map[int]bool{}
	for _, i := range spec.Frontier {
		on[i] = true
	}
	var path strings.Builder
	for _, i := range spec.Frontier {
		if i < 0 || i >= len(spec.Points) {
			continue
		}
		p := spec.Points[i]
		x, y := svgNum(xs.at(p.X)), svgNum(ys.at(clamp01(p.Y)))
		if path.Len() == 0 {
			path.WriteString("M" + x + " " + y)
			continue
		}
		// A staircase: the best success reachable for a cost holds until
		// the next frontier point's cost.
		path.WriteString(" H" + x + " V" + y)
	}
	c.FrontierPath = path.String()

	for i, p := range spec.Points {
		if !finite(p.X) || !finite(p.Y) {
			continue
		}
		pp := placedPoint{CX: xs.at(p.X), CY: ys.at(clamp01(p.Y)), Title: p.Title, OnFrontier: on[i]}
		if p.Label != "" && (pp.OnFrontier || placeable <= labelAllUpTo) {
			pp.Label = shorten(p.Label, pointLabel)
			pp.LabelX, pp.LabelY, pp.Anchor = pp.CX+8, pp.CY-8, "start"
			if pp.CX > c.Plot.Right-160 {
				pp.LabelX, pp.Anchor = pp.CX-8, "end"
			}
			if pp.CY < c.Plot.Top+16 {
				pp.LabelY = pp.CY + 18
			}
		}
		c.Points = append(c.Points, pp)
	}
	// Frontier points last, so they are drawn over the others.
	slices.SortStableFunc(c.Points, func(a, b placedPoint) int {
		switch {
		case a.OnFrontier == b.OnFrontier:
			return 0
		case a.OnFrontier:
			return 1
		}
		return -1
	})
	return c
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func clamp01(x float64) float64 { return min(max(x, 0), 1) }

// barValue is one bar: a rate with its 95% interval. Missing means the
// group has no graded attempt in the series: no bar is drawn.
type barValue struct {
	Rate, Low, High float64
	Missing         bool
	Title           string
}

// barGroup is one labelled group of bars, one per series.
type barGroup struct {
	Label  string
	Title  string
	Values []barValue
}

// barsSpec describes a horizontal grouped bar chart of rates: one group per
// row (an entry), one bar per series (a difficulty) with its interval drawn
// as a whisker.
type barsSpec struct {
	ID, Title, Desc string
	XLabel          string
	Series          []string
	Groups          []barGroup
}

// placedBar is a bar in pixels with its whisker.
type placedBar struct {
	X, Y, W, H float64
	Series     int
	Title      string
	// Missing bars get a "no tasks" mark at MarkX, MarkY instead of a bar.
	Missing      bool
	MarkX, MarkY float64
	// The whisker spans the interval at WhiskerY.
	WhiskerX1, WhiskerX2, WhiskerY float64
}

// placedGroup is a laid-out group: its label at the left of its bars.
type placedGroup struct {
	Label  string
	Title  string
	LabelY float64
	Bars   []placedBar
}

// legendItem is a series' swatch and name.
type legendItem struct {
	X, Y   float64
	Label  string
	Series int
}

// barChart is a laid-out grouped bar chart.
type barChart struct {
	ID, Title, Desc string
	Width, Height   float64
	Plot            plotBox
	X               chartAxis
	Groups          []placedGroup
	Legend          []legendItem
}

// Empty reports whether the chart has nothing to draw.
func (c barChart) Empty() bool { return len(c.Groups) == 0 || len(c.Legend) == 0 }

// Bar chart geometry, in viewBox units.
const (
	barsWidth    = 880
	barsLeft     = 220 // room for entry names
	barHeight    = 10
	barGap       = 2
	barGroupGap  = 14
	barsTop      = 40 // room for the legend
	barsBottom   = 48 // room for the axis
	barLabelSize = 26 // characters of an entry's name
	seriesColors = 5  // distinct series styles; more series reuse them
	minBarWidth  = 1.5
)

// seriesClass is the CSS class of series i's bars and swatch.
func seriesClass(i int) string { return "series-" + strconv.Itoa(i%seriesColors) }

// layoutBars places a grouped bar chart: groups top to bottom in the order
// given, bars of a group in series order, the rate axis 0–100% along X.
func layoutBars(spec barsSpec) barChart {
	n := max(len(spec.Series), 1)
	groupHeight := float64(n*(barHeight+barGap)-barGap) + barGroupGap
	height := barsTop + groupHeight*float64(len(spec.Groups)) + barsBottom
	c := barChart{
		ID: spec.ID, Title: spec.Title, Desc: spec.Desc, Width: barsWidth, Height: height,
		Plot: plotBox{Left: barsLeft, Top: barsTop, Right: barsWidth - 24, Bottom: height - barsBottom},
		X:    chartAxis{Label: spec.XLabel},
	}
	ticks, _ := niceTicks(0, 1, 5)
	xs := linearScale{d0: 0, d1: 1, r0: c.Plot.Left, r1: c.Plot.Right}
	c.X.Ticks = axisTicks(ticks, xs, percentLabel)
	for i, s := range spec.Series {
		c.Legend = append(c.Legend, legendItem{X: c.Plot.Left + float64(i)*130, Y: 16, Label: shorten(s, 14), Series: i})
	}
	for gi, g := range spec.Groups {
		top := c.Plot.Top + barGroupGap/2 + float64(gi)*groupHeight
		pg := placedGroup{Label: shorten(g.Label, barLabelSize), Title: g.Title, LabelY: top + (groupHeight-barGroupGap)/2}
		for si, v := range g.Values {
			y := top + float64(si*(barHeight+barGap))
			b := placedBar{X: c.Plot.Left, Y: y, H: barHeight, Series: si, Title: v.Title, Missing: v.Missing}
			if v.Missing {
				b.MarkX, b.MarkY = c.Plot.Left+4, y+barHeight-1
			} else {
				// A sliver for 0%, so that none reads as a bar, not as a gap.
				b.W = max(xs.at(clamp01(v.Rate))-c.Plot.Left, minBarWidth)
				b.WhiskerX1, b.WhiskerX2, b.WhiskerY = xs.at(clamp01(v.Low)), xs.at(clamp01(v.High)), y+barHeight/2
			}
			pg.Bars = append(pg.Bars, b)
		}
		c.Groups = append(c.Groups, pg)
	}
	return c
}
