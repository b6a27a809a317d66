package sandbox

// The data portal's datasets. They never change, so every namespace shares them.

// column describes one column of a dataset.
type column struct {
	Key         string
	Label       string
	Numeric     bool
	Unit        string
	Filter      bool // offered as a filter (exact match on ?key=value)
	Description string
}

// dataset is a small table with its metadata.
type dataset struct {
	Slug        string
	Title       string
	Description string
	Publisher   string
	License     string
	Updated     string
	Frequency   string
	Source      string
	Columns     []column
	Rows        [][]string // numbers written plainly: 32410, 18.2
	ChartLabel  string     // the column naming each bar
	ChartValue  string     // the numeric column the bars show (summed per label)
}

// column returns the index of a column by key, or -1.
func (d *dataset) column(key string) int {
	for i, c := range d.Columns {
		if c.Key == key {
			return i
		}
	}
	return -1
}

func seedDatasets() []*dataset {
	return []*dataset{
		{
			Slug: "air-quality", Title: "City Air Quality 2024",
			Description: "Monthly mean concentrations of fine particulate matter (PM2.5), nitrogen dioxide and ozone measured at the city's reference stations in 2024.",
			Publisher:   "Environmental Monitoring Unit", License: "ODbL 1.0", Updated: "2025-01-10", Frequency: "Monthly",
			Source: "Reference monitoring stations, averaged across the city",
			Columns: []column{
				{Key: "month", Label: "Month", Description: "Calendar month (YYYY-MM)"},
				{Key: "quarter", Label: "Quarter", Filter: true, Description: "Calendar quarter"},
				{Key: "pm25", Label: "PM2.5", Numeric: true, Unit: "µg/m³", Description: "Mean fine particulate matter"},
				{Key: "no2", Label: "NO₂", Numeric: true, Unit: "µg/m³", Description: "Mean nitrogen dioxide"},
				{Key: "ozone", Label: "Ozone", Numeric: true, Unit: "µg/m³", Description: "Mean ozone"},
			},
			Rows: [][]string{
				{"2024-01", "Q1", "18.2", "34.1", "41.0"},
				{"2024-02", "Q1", "16.9", "31.7", "45.2"},
				{"2024-03", "Q1", "14.1", "28.4", "52.3"},
				{"2024-04", "Q2", "12.5", "24.9", "60.1"},
				{"2024-05", "Q2", "15.8", "22.3", "66.4"},
				{"2024-06", "Q2", "22.3", "21.0", "71.8"},
				{"2024-07", "Q3", "31.4", "19.6", "78.5"},
				{"2024-08", "Q3", "27.9", "20.2", "74.9"},
				{"2024-09", "Q3", "17.6", "25.8", "58.7"},
				{"2024-10", "Q4", "13.2", "30.5", "47.3"},
				{"2024-11", "Q4", "15.0", "33.9", "40.6"},
				{"2024-12", "Q4", "19.7", "36.2", "38.8"},
			},
			ChartLabel: "month", ChartValue: "pm25",
		},
		{
			Slug: "bike-trips", Title: "Bike Share Trips by Station",
			Description: "Trips started at each bike share station in 2024, with the station's district and number of docks.",
			Publisher:   "City Mobility Office", License: "CC BY 4.0", Updated: "2025-03-18", Frequency: "Yearly",
			Source: "Bike share operator trip logs",
			Columns: []column{
				{Key: "station", Label: "Station", Description: "Station name"},
				{Key: "district", Label: "District", Filter: true, Description: "District the station is in"},
				{Key: "trips_2024", Label: "Trips in 2024", Numeric: true, Description: "Trips started at the station in 2024"},
				{Key: "docks", Label: "Docks", Numeric: true, Description: "Number of docks"},
			},
			Rows: [][]string{
				{"Central Station", "Old Town", "32410", "40"},
				{"Market Square", "Old Town", "18275", "24"},
				{"Cathedral Gate", "Old Town", "9840", "16"},
				{"Riverside Park", "Riverside", "27960", "30"},
				{"Mill Lane", "Riverside", "21305", "20"},
				{"Boathouse", "Riverside", "14120", "18"},
				{"Riverside Library", "Riverside", "11050", "12"},
				{"Harbour Front", "Harbour", "24880", "28"},
				{"Ferry Terminal", "Harbour", "19990", "22"},
				{"Dockyard", "Harbour", "8415", "14"},
			},
			ChartLabel: "station", ChartValue: "trips_2024",
		},
		{
			Slug: "library-loans", Title: "Library Loans by Branch",
			Description: "Items lent by each public library branch per year, 2022 to 2024.",
			Publisher:   "Public Library Service", License: "CC0 1.0", Updated: "2025-02-12", Frequency: "Yearly",
			Source: "Library management system",
			Columns: []column{
				{Key: "branch", Label: "Branch", Filter: true, Description: "Library branch"},
				{Key: "year", Label: "Year", Filter: true, Description: "Calendar year"},
				{Key: "loans", Label: "Loans", Numeric: true, Description: "Items lent during the year"},
			},
			Rows: [][]string{
				{"Central", "2022", "48210"}, {"Central", "2023", "51340"}, {"Central", "2024", "53020"},
				{"Northside", "2022", "22150"}, {"Northside", "2023", "21870"}, {"Northside", "2024", "23400"},
				{"Riverside", "2022", "18430"}, {"Riverside", "2023", "19960"}, {"Riverside", "2024", "20510"},
				{"Harbour", "2022", "12040"}, {"Harbour", "2023", "12980"}, {"Harbour", "2024", "14310"},
				{"Old Town", "2022", "9870"}, {"Old Town", "2023", "10420"}, {"Old Town", "2024", "9950"},
			},
			ChartLabel: "branch", ChartValue: "loans",
		},
		{
			Slug: "city-budget", Title: "City Budget 2024",
			Description: "The city's adopted 2024 budget by department, in thousands of dollars, with the change from 2023.",
			Publisher:   "City Finance Office", License: "CC BY 4.0", Updated: "2025-01-31", Frequency: "Yearly",
			Source: "Adopted budget, council resolution 2023/118",
			Columns: []column{
				{Key: "department", Label: "Department", Description: "City department"},
				{Key: "category", Label: "Category", Filter: true, Description: "Budget category"},
				{Key: "budget", Label: "Budget", Numeric: true, Unit: "thousand $", Description: "Adopted 2024 budget"},
				{Key: "change_pct", Label: "Change", Numeric: true, Unit: "%", Description: "Change from the 2023 budget"},
			},
			Rows: [][]string{
				{"Parks & Recreation", "Services", "12400", "8.5"},
				{"Public Transport", "Infrastructure", "48900", "3.1"},
				{"Libraries", "Services", "9750", "1.2"},
				{"Roads & Bridges", "Infrastructure", "37200", "-2.4"},
				{"Waste Management", "Services", "21300", "0.8"},
				{"Water & Sewer", "Infrastructure", "29650", "4.0"},
				{"City Administration", "Administration", "15800", "-1.5"},
				{"IT Services", "Administration", "7450", "6.2"},
			},
			ChartLabel: "department", ChartValue: "budget",
		},
	}
}
