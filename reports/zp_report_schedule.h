/* zp_report_schedule.h — one rank's step schedule in program order, as `zplan schedule` prints it. */
#ifndef ZP_REPORT_SCHEDULE_H
#define ZP_REPORT_SCHEDULE_H

#include <stdio.h>

#include "zp_model.h"
#include "zp_plan.h"
#include "zp_schedule.h"
#include "zp_table.h"

/* Writes the schedule of rank `rank` of plan `p` as text (a header, then one line per op: id, stream,
 * phase, layer, micro-batch, kind, name, the ids it depends on, what it does) or JSON ({"plan",
 * "memory_gb", "ops"}); ZP_EINVAL for another format. */
zp_status zp_report_schedule(FILE *f, zp_format fmt, const zp_model *m, const zp_plan *p, int64_t rank,
                             const zp_schedule *s);

#endif
