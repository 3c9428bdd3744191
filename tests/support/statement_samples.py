"""Statements of every kind the whitelist admits, and a table with every column type, shared by
the statement tests."""

from __future__ import annotations

from lakectl.table.schema import parse_schema

ALL_TYPES = parse_schema(
    "id bigint not null, i int, b bigint, f float, d double, flag boolean, s string, "
    "amount decimal(10,2), day date, ts timestamp, raw binary"
)


ALLOWED = [
    "UPDATE t SET i = i + 1, b = b - 1, d = d * 2.5, f = f / 3, i2 = i % 7 WHERE i > 0;",
    "UPDATE t SET i = -i, flag = NOT flag WHERE (i <> 1 AND b != 2) OR d <= 3 OR d >= 4 OR f < 5;",
    "UPDATE t SET flag = i <=> b, s = 'x' WHERE i IS DISTINCT FROM b AND i IN (1, 2, NULL) AND b NOT IN (3) AND d BETWEEN 1 AND 2;",
    "DELETE FROM t WHERE s LIKE 'a%' OR s NOT LIKE '_b' OR s ILIKE 'C%' OR s IS NULL OR i IS NOT NULL;",
    "UPDATE t SET s = CASE WHEN i > 1 THEN 'big' WHEN i IS NULL THEN NULL ELSE 'small' END;",
    "UPDATE t SET s = CASE i WHEN 1 THEN 'one' WHEN 2 THEN 'two' END, i = IF(i > 2, 2, i);",
    "UPDATE t SET amount = CAST(s AS decimal(10,2)), i = CAST(d AS int), s = CAST(ts AS string);",
    "UPDATE t SET i = coalesce(i, b, 0), b = nullif(b, 0), d = nvl(d, 0), f = ifnull(f, 1);",
    "UPDATE t SET s = upper(lower(trim(ltrim(rtrim(s))))), i = length(s) + char_length(s);",
    "UPDATE t SET s = concat(substring(s, 1, 2), substr(s, 3), s || 'x', concat_ws('-', s, s));",
    "UPDATE t SET s = replace(lpad(rpad(s, 5, '*'), 8, '#'), 'a', 'b'), i = instr(s, 'x') + locate('y', s, 2);",
    "UPDATE t SET s = initcap(reverse(replace(s, 'x')));",
    "UPDATE t SET d = abs(round(d, 2)) + floor(d) + ceil(d) + ceiling(d) + sqrt(d) + pow(d, 2) + power(d, 3);",
    "UPDATE t SET i = mod(i, 3) + greatest(i, b, 3) + least(i, 0) + sign(i);",
    "UPDATE t SET i = year(day) + month(day) + day(day) + dayofmonth(ts) + datediff(day, to_date(ts));",
    "UPDATE t SET day = date_add(day, 1), ts = date_sub(day, 2) WHERE day < DATE '2014-09-01';",
    "UPDATE t SET ts = TIMESTAMP '2014-09-01 10:00:00' WHERE ts >= TIMESTAMP '2014-01-01T00:00:00Z';",
    "UPDATE t SET s = trim(BOTH 'x' FROM s), i = 2147483647, b = -9223372036854775808, f = 1e3;",
    "DELETE FROM t;",
    "UPDATE t SET i = NULL, s = NULL, flag = TRUE WHERE flag = FALSE;",
]
