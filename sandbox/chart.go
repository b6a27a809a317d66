package sandbox

import (
	"fmt"
	"math"
	"strconv"
)

// chart is an inline SVG bar chart, laid out in Go so the template only draws.
type chart struct {
	Title  string
	Width  int
	Height int
	Bars   []bar
	AxisX  float64 // left edge of the plot
	AxisY  float64 // baseline
	Right  float64
	ScaleX float64 // where the scale's numbers end
	Max    string  // the value at the top of the scale
	Top    float64
}

// bar is one bar with its label.
type bar struct {
	X, Y, W, H     float64
	Label          string
	Value          string
	LabelX, LabelY float64
}

// Chart geometry in SVG user units.
const (
	chartWidth  = 640
	chartHeight = 300
	chartLeft   = 56
	chartRight  = 12
	chartTop    = 16
	chartBottom = 96 // room for rotated labels
)

// barChart sums the dataset's chart value per chart label over the shown rows,
// in the order labels first appear, and lays the bars out.
func barChart(d *dataset, rows [][]string) chart {
	li, vi := d.column(d.ChartLabel), d.column(d.ChartValue)
	c := chart{
		Title:  fmt.Sprintf("%s by %s", d.Columns[vi].Label, d.Columns[li].Label),
		Width:  chartWidth,
		Height: chartHeight,
		AxisX:  chartLeft,
		AxisY:  chartHeight - chartBottom,
		Right:  chartWidth - chartRight,
		ScaleX: chartLeft - 6,
		Top:    chartTop,
	}
	if d.Columns[vi].Unit != "" {
		c.Title += " (" + d.Columns[vi].Unit + ")"
	}
	var labels []string
	sums := map[string]float64{}
	for _, row := range rows {
		v, err := strconv.ParseFloat(row[vi], 64)
		if err != nil {
			continue
		}
		if _, seen := sums[row[li]]; !seen {
			labels = append(labels, row[li])
		}
		sums[row[li]] += v
	}
	if len(labels) == 0 {
		return c
	}
	maxV := 0.0
	for _, l := range labels {
		maxV = math.Max(maxV, sums[l])
	}
	if maxV <= 0 {
		maxV = 1
	}
	c.Max = formatNumber(maxV)
	plotW := c.Right - c.AxisX
	plotH := c.AxisY - c.Top
	slot := plotW / float64(len(labels))
	for i, l := range labels {
		h := math.Max(0, sums[l]) / maxV * plotH
		w := math.Min(slot*0.7, 64)
		mid := c.AxisX + (float64(i)+0.5)*slot
		c.Bars = append(c.Bars, bar{
			X: round1(mid - w/2), Y: round1(c.AxisY - h), W: round1(w), H: round1(h),
			Label: l, Value: formatNumber(sums[l]),
			LabelX: round1(mid), LabelY: c.AxisY + 12,
		})
	}
	return c
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// formatNumber writes a sum the way the table does.
func formatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return displayValue(strconv.FormatInt(int64(f), 10), true)
	}
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}
