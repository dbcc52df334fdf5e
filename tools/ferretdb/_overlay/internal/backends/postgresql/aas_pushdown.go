// aas patch (Agent Automation Service, tools/ferretdb): translations that let PostgreSQL sort and limit a find.
//
// Every condition built here selects a SUPERSET of the documents the MongoDB filter matches (the handler filters
// the rows again in Go), and field sorts are ordered the way MongoDB orders BSON types (type bracket first, then
// the value; strings and object ids by their bytes). The handler pushes a sort and a limit down only for sorts
// this file can express, and re-reads without the limit when a row PostgreSQL returned is not a match
// (internal/handler/msg_find.go). Known difference from MongoDB: array-valued sort fields are ordered as arrays,
// not by their smallest / largest element.

package postgresql

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/FerretDB/FerretDB/internal/backends"
	"github.com/FerretDB/FerretDB/internal/backends/postgresql/metadata"
	"github.com/FerretDB/FerretDB/internal/handler/sjson"
	"github.com/FerretDB/FerretDB/internal/types"
	"github.com/FerretDB/FerretDB/internal/util/lazyerrors"
	"github.com/FerretDB/FerretDB/internal/util/must"
)

// SortableField reports whether a sort key can be ordered by PostgreSQL (a plain top-level field name).
var SortableField = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString

var compareOperators = map[string]string{"$lt": "<", "$lte": "<=", "$gt": ">", "$gte": ">="}

// filterCompare returns a condition for `{key: {op: v}}` on a top-level field: values of v's type bracket that
// compare as asked, or any array (whose elements the handler checks).
func filterCompare(p *metadata.Placeholder, key, op string, v any) (string, []any) {
	sqlOp := compareOperators[op]

	var types_ string
	var value any
	var column string

	switch v := v.(type) {
	case string:
		types_, value, column = `'string'`, v, `(%[1]s->>%[2]s) COLLATE "C"`
	case types.ObjectID:
		types_, value, column = `'objectId'`, string(must.NotFail(sjson.MarshalSingleValue(v))), `(%[1]s->>%[2]s) COLLATE "C"`
		value = strings.Trim(value.(string), `"`)
	case time.Time:
		types_, value, column = `'date'`, string(must.NotFail(sjson.MarshalSingleValue(v))), `(%[1]s->%[2]s)`
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", nil
		}

		types_, value, column = `'int','long','double'`, string(must.NotFail(sjson.MarshalSingleValue(v))), `(%[1]s->%[2]s)`
	case int32, int64:
		types_, value, column = `'int','long','double'`, string(must.NotFail(sjson.MarshalSingleValue(v))), `(%[1]s->%[2]s)`
	default:
		return "", nil
	}

	k, val := p.Next(), p.Next()
	cast := ""

	if !strings.Contains(column, "COLLATE") {
		cast = "::jsonb"
	}

	typ := `%[1]s->'$s'->'p'->%[2]s->>'t'`
	sql := `((` + typ + ` IN (` + types_ + `) AND ` + column + ` ` + sqlOp + ` %[3]s` + cast + `) OR ` + typ + ` = 'array')`

	return fmt.Sprintf(sql, metadata.DefaultColumn, k, val), []any{key, value}
}

// logicalCondition returns a condition for a top-level `$and` or `$or` (empty: no condition can be built).
func logicalCondition(p *metadata.Placeholder, op string, v any) (string, []any, error) {
	arr, ok := v.(*types.Array)
	if !ok || arr.Len() == 0 {
		return "", nil, nil
	}

	// An $or branch without a condition matches anything: then the whole $or adds none, and the placeholders
	// its other branches took are given back.
	saved := *p

	var parts []string
	var args []any

	for i := 0; i < arr.Len(); i++ {
		doc, ok := must.NotFail(arr.Get(i)).(*types.Document)

		var conds []string
		var a []any

		if ok {
			var err error
			if conds, a, err = whereConditions(p, doc); err != nil {
				return "", nil, err
			}
		}

		if len(conds) == 0 {
			if op == "$or" {
				*p = saved
				return "", nil, nil
			}

			continue
		}

		parts = append(parts, "("+strings.Join(conds, " AND ")+")")
		args = append(args, a...)
	}

	if len(parts) == 0 {
		return "", nil, nil
	}

	joiner := " AND "
	if op == "$or" {
		joiner = " OR "
	}

	return "(" + strings.Join(parts, joiner) + ")", args, nil
}

// fieldsOrderBy returns an ORDER BY clause for a sort on top-level fields, or "" when a key is not one.
func fieldsOrderBy(sort *types.Document) string {
	if sort.Len() == 0 {
		return ""
	}

	var cols []string

	for _, key := range sort.Keys() {
		if !SortableField(key) {
			return ""
		}

		dir, ok := must.NotFail(sort.Get(key)).(int64)
		if !ok || (dir != 1 && dir != -1) {
			return ""
		}

		suffix := ""
		if dir == -1 {
			suffix = " DESC"
		}

		field := "'" + key + "'"
		typ := fmt.Sprintf(`%s->'$s'->'p'->%s->>'t'`, metadata.DefaultColumn, field)
		rank := fmt.Sprintf(`CASE COALESCE(%s, 'null') WHEN 'null' THEN 1 WHEN 'int' THEN 2 WHEN 'long' THEN 2 `+
			`WHEN 'double' THEN 2 WHEN 'string' THEN 3 WHEN 'object' THEN 4 WHEN 'array' THEN 5 WHEN 'binData' THEN 6 `+
			`WHEN 'objectId' THEN 7 WHEN 'bool' THEN 8 WHEN 'date' THEN 9 WHEN 'timestamp' THEN 10 WHEN 'regex' THEN 11 `+
			`ELSE 12 END`, typ)
		num := fmt.Sprintf(`CASE WHEN %s IN ('int','long','double','bool','date','timestamp') THEN %s->%s END`,
			typ, metadata.DefaultColumn, field)
		str := fmt.Sprintf(`CASE WHEN %s IN ('string','objectId') THEN (%s->>%s) COLLATE "C" END`,
			typ, metadata.DefaultColumn, field)
		cols = append(cols, rank+suffix, num+suffix, str+suffix)
	}

	return " ORDER BY " + strings.Join(cols, ", ")
}

// ExactFilterFields reports whether whereConditions translates every part of a filter exactly for documents in
// which none of the filter's fields holds an array, and returns those fields. Exact parts: top-level fields
// compared with a string or a boolean ($eq, $ne, or a plain value), ranges ($lt, $lte, $gt, $gte) with a string,
// a date or a finite number, and $and / $or of exact parts.
func ExactFilterFields(filter *types.Document) ([]string, bool) {
	seen := map[string]struct{}{}
	if !exactFilter(filter, seen) {
		return nil, false
	}

	fields := make([]string, 0, len(seen))
	for f := range seen {
		fields = append(fields, f)
	}

	return fields, true
}

func exactFilter(filter *types.Document, seen map[string]struct{}) bool {
	for _, key := range filter.Keys() {
		value := must.NotFail(filter.Get(key))

		if key == "$and" || key == "$or" {
			arr, ok := value.(*types.Array)
			if !ok {
				return false
			}

			for i := 0; i < arr.Len(); i++ {
				doc, ok := must.NotFail(arr.Get(i)).(*types.Document)
				if !ok || !exactFilter(doc, seen) {
					return false
				}
			}

			continue
		}

		if !SortableField(key) {
			return false
		}

		switch v := value.(type) {
		case string, bool:
		case *types.Document:
			if v.Len() == 0 {
				return false
			}

			for _, op := range v.Keys() {
				operand := must.NotFail(v.Get(op))

				switch op {
				case "$eq", "$ne":
					switch operand.(type) {
					case string, bool:
					default:
						return false
					}
				case "$lt", "$lte", "$gt", "$gte":
					switch o := operand.(type) {
					case string, time.Time, int32, int64:
					case float64:
						if math.IsNaN(o) || math.IsInf(o, 0) {
							return false
						}
					default:
						return false
					}
				default:
					return false
				}
			}
		default:
			return false
		}

		seen[key] = struct{}{}
	}

	return true
}

// countCertain counts in SQL the rows of an exactly translated filter in which none of its fields holds an array,
// and returns the other rows it selected for the caller to filter (backends.QueryParams.CountCertain).
func countCertain(ctx context.Context, p *pgxpool.Pool, q, where string, args []any, filter *types.Document, onlyRecordIDs bool) (*backends.QueryResult, error) { //nolint:lll // for readability
	fields, ok := ExactFilterFields(filter)
	if !ok {
		return nil, lazyerrors.New("CountCertain with a filter that is not translated exactly")
	}

	uncertain := "false"

	if len(fields) > 0 {
		parts := make([]string, len(fields))
		for i, f := range fields {
			parts[i] = fmt.Sprintf(`COALESCE(%s->'$s'->'p'->'%s'->>'t', '') = 'array'`, metadata.DefaultColumn, f)
		}

		uncertain = "(" + strings.Join(parts, " OR ") + ")"
	}

	joiner := " WHERE "
	if where != "" {
		joiner = " AND "
	}

	// The table follows the last " FROM " before the WHERE clause (a comment comes before it).
	from := q[strings.LastIndex(q[:len(q)-len(where)], " FROM "):]

	var counted int64
	if err := p.QueryRow(ctx, "SELECT count(*)"+from+joiner+"NOT "+uncertain, args...).Scan(&counted); err != nil {
		return nil, lazyerrors.Error(err)
	}

	rows, err := p.Query(ctx, q+joiner+uncertain, args...)
	if err != nil {
		return nil, lazyerrors.Error(err)
	}

	return &backends.QueryResult{Iter: newQueryIterator(ctx, rows, onlyRecordIDs), Counted: counted}, nil
}
