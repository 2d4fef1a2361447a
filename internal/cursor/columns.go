package cursor

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// The column contract (ARCHITECTURE.md, "Business cursors").
const (
	ColumnPartition  = "partition"
	ColumnNextOffset = "next_offset"
	ColumnTopic      = "topic"
	ColumnUpdatedAt  = "updated_at"
)

const contract = "partition and next_offset, optionally topic and updated_at"

type columnKind int

const (
	kindInteger columnKind = iota
	kindText
	kindTime
)

var columnKinds = map[string]columnKind{
	ColumnPartition:  kindInteger,
	ColumnNextOffset: kindInteger,
	ColumnTopic:      kindText,
	ColumnUpdatedAt:  kindTime,
}

// Database type names (sql.ColumnType.DatabaseTypeName, as pgx and
// go-sql-driver/mysql report them) each kind accepts.
var typeNames = map[columnKind][]string{
	kindInteger: {"INT2", "INT4", "INT8", "NUMERIC", "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT", "DECIMAL"},
	kindText:    {"TEXT", "VARCHAR", "BPCHAR", "CHAR", "NAME", "TINYTEXT", "MEDIUMTEXT", "LONGTEXT"},
	kindTime:    {"TIMESTAMP", "TIMESTAMPTZ", "DATETIME"},
}

var kindNames = map[columnKind]string{
	kindInteger: "an integer (INT, BIGINT)",
	kindText:    "text (VARCHAR, TEXT)",
	kindTime:    "a timestamp (TIMESTAMP, TIMESTAMPTZ, DATETIME)",
}

func acceptsType(k columnKind, name string) bool {
	name = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(name)), "UNSIGNED ")
	for _, t := range typeNames[k] {
		if name == t {
			return true
		}
	}
	return false
}

// contractError is rows that break the column contract (as opposed to an
// error of the driver or the server while reading them).
type contractError struct{ error }

func broken(format string, args ...any) error { return contractError{fmt.Errorf(format, args...)} }

// scanRows reads the rows by the column contract.
func scanRows(rows *sql.Rows, limit int) (proof.CursorObservation, error) {
	cts, err := rows.ColumnTypes()
	if err != nil {
		return proof.CursorObservation{}, err
	}
	index := map[string]int{}
	for i, ct := range cts {
		name := strings.ToLower(ct.Name())
		if _, dup := index[name]; dup {
			return proof.CursorObservation{}, broken("the query returns column %s twice: the column contract is %s", name, contract)
		}
		k, known := columnKinds[name]
		if !known {
			return proof.CursorObservation{}, broken("the query returns column %q, which is not in the column contract (%s): leave it out, or alias the right column", ct.Name(), contract)
		}
		if !acceptsType(k, ct.DatabaseTypeName()) {
			return proof.CursorObservation{}, broken("column %s is %s, and the contract needs %s", name, typeLabel(ct.DatabaseTypeName()), kindNames[k])
		}
		index[name] = i
	}
	for _, need := range []string{ColumnPartition, ColumnNextOffset} {
		if _, ok := index[need]; !ok {
			return proof.CursorObservation{}, broken("the query returns no column %s: the column contract is %s, e.g. "+
				"SELECT partition_id AS partition, last_offset + 1 AS next_offset, updated_at FROM consumer_cursor WHERE group_id = $1 (? for mysql)", need, contract)
		}
	}

	obs := proof.CursorObservation{Read: true}
	_, obs.HasTopic = index[ColumnTopic]
	dest := make([]any, len(cts))
	texts := make([]sql.NullString, len(cts))
	times := make([]sql.NullTime, len(cts))
	for name, i := range index {
		if columnKinds[name] == kindTime {
			dest[i] = &times[i]
		} else {
			dest[i] = &texts[i]
		}
	}
	n := 0
	for rows.Next() {
		n++
		if n > limit {
			return proof.CursorObservation{}, broken("the query returned more than %d rows (the row limit, one row per partition): filter it by the group ID", limit)
		}
		if err := rows.Scan(dest...); err != nil {
			return proof.CursorObservation{}, broken("row %d: %v", n, err)
		}
		var row proof.CursorRow
		for _, name := range []string{ColumnPartition, ColumnNextOffset, ColumnTopic, ColumnUpdatedAt} {
			i, ok := index[name]
			if !ok {
				continue
			}
			if (columnKinds[name] == kindTime && !times[i].Valid) || (columnKinds[name] != kindTime && !texts[i].Valid) {
				return proof.CursorObservation{}, broken("column %s is NULL in row %d%s: every column of the contract needs a value "+
					"(leave updated_at out of the query if the table does not keep it)", name, n, rowName(texts, index, name))
			}
			switch name {
			case ColumnPartition, ColumnNextOffset:
				v, err := parseInteger(texts[i].String)
				if err != nil {
					return proof.CursorObservation{}, broken("column %s is %q in row %d%s: not an integer", name, clip(texts[i].String), n, rowName(texts, index, name))
				}
				if name == ColumnPartition {
					row.Partition = v
				} else {
					row.NextOffset = v
				}
			case ColumnTopic:
				row.Topic = texts[i].String
			case ColumnUpdatedAt:
				row.UpdatedAt = times[i].Time.UTC().Truncate(time.Second)
			}
		}
		obs.Rows = append(obs.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return proof.CursorObservation{}, err
	}
	return obs, nil
}

// parseInteger reads an integer, also written as a decimal without a
// fraction ("150.00", as DECIMAL arithmetic returns it).
func parseInteger(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if whole, frac, ok := strings.Cut(s, "."); ok && strings.Trim(frac, "0") == "" {
		s = whole
	}
	return strconv.ParseInt(s, 10, 64)
}

// rowName names the row's partition, when it is readable, for messages
// about its other columns.
func rowName(texts []sql.NullString, index map[string]int, about string) string {
	i, ok := index[ColumnPartition]
	if !ok || about == ColumnPartition || !texts[i].Valid {
		return ""
	}
	return " (partition " + clip(texts[i].String) + ")"
}

func typeLabel(name string) string {
	if name == "" {
		return "of an unknown type"
	}
	return strings.ToUpper(name)
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
