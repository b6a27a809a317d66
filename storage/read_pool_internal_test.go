package storage

import "testing"

func TestIsSelect(t *testing.T) {
	for stmt, want := range map[string]bool{
		"SELECT 1":               true,
		"select * from runs":     true,
		"Select\n  id FROM runs": true,
		"SELECT":                 true,
		"SELECT(1)":              true,
		"SELECTED":               false,
		"SELECT_x":               false,
		"INSERT INTO runs (id) VALUES (1) RETURNING id":             false,
		"UPDATE runs SET status = 'done'":                           false,
		"WITH t AS (SELECT 1) SELECT * FROM t":                      false,
		"WITH t AS (DELETE FROM runs RETURNING id) SELECT * FROM t": false,
		"":    false,
		"SEL": false,
	} {
		if got := isSelect(stmt); got != want {
			t.Errorf("isSelect(%q) = %v, want %v", stmt, got, want)
		}
	}
}
