#!/usr/bin/env bash
# `make demo`: create a sales table (the CDC sales `sell` schema), load a base and two CDC batches,
# then show what happened (history), what the table holds (show) and its rows (snapshot).
set -euo pipefail
cd "$(dirname "$0")/.."
L=".venv/bin/lakectl"
export LAKECTL_WAREHOUSE="${LAKECTL_WAREHOUSE:-./demo-warehouse}"
rm -rf "$LAKECTL_WAREHOUSE/sales"
S=sample_data/sales

# shellcheck source=scripts/steps.sh
source scripts/steps.sh

step $L create sales \
  --schema "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, status_id string, total_amt double, batch int, op_code string, store_id string, create_date string" \
  --primary-key sell_id --partition-by create_date
step $L load sales $S/base.csv --mode upsert
step $L load sales $S/cdc_batch_1.csv --mode cdc --op-column op_code --order-by change_ts
step $L load sales $S/cdc_batch_2.csv --mode cdc --op-column op_code --order-by change_ts
step $L history sales
step $L show sales
step $L snapshot sales --where "sell_id <= 5 or sell_id >= 229" --columns sell_id,change_ts,status_id,total_amt,store_id,create_date
step $L snapshot sales --version 1 --where "sell_id <= 5" --columns sell_id,change_ts,status_id,total_amt
# A Type 7 dimension: corrections as timestamped statements, applied while reading.
rm -rf "$LAKECTL_WAREHOUSE/doctors"
step $L create doctors --schema "number int, first_name string, last_name string, extra_field string default 'fishfingers and custard'"
step $L load doctors sample_data/doctors/doctors.avro --mode append
step $L apply-updates doctors sample_data/doctors/updates.sql
step $L updates doctors
step $L snapshot doctors --as-of 2014-01-01
printf '\nThe table is in %s/sales (Hive 3 ACID layout: delta_*/delete_delta_* directories).\n' "$LAKECTL_WAREHOUSE"
