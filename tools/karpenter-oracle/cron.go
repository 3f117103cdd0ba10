// Cron: what Karpenter's cron library (robfig/cron v3, the standard parser Karpenter reads
// budget schedules with) answers for a schedule read in a time zone, so the shared
// schedule implementation can be checked against it, clock changes included.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

func init() { handlers["cron-next"] = cronNext }

// cronNext answers
//
//	{"schedule": s, "timeZone": z, "after": RFC 3339 time, "now": RFC 3339 time, "duration": d}
//
// with {"parseError": e} when the library refuses "TZ=z s", else {"next": n, "active": a}: n
// is Schedule.Next(after) in RFC 3339 (UTC), null for the library's zero time; a is, when now
// is given, Karpenter's budget rule: Next(now - d) is not after now (d a Go duration, default
// 0), else null. The time zone defaults to UTC, as Karpenter's budgets read schedules.
func cronNext(_ context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Op       string     `json:"op"`
		Schedule string     `json:"schedule"`
		TimeZone string     `json:"timeZone"`
		After    *time.Time `json:"after"`
		Now      *time.Time `json:"now"`
		Duration string     `json:"duration"`
	}
	if err := readRequest(raw, &req); err != nil {
		return nil, err
	}
	zone := req.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	schedule, err := cron.ParseStandard(fmt.Sprintf("TZ=%s %s", zone, req.Schedule))
	if err != nil {
		return map[string]any{"parseError": err.Error()}, nil
	}
	answer := map[string]any{"next": nil, "active": nil}
	if req.After != nil {
		if next := schedule.Next(*req.After); !next.IsZero() {
			answer["next"] = next.UTC().Format(time.RFC3339)
		}
	}
	if req.Now != nil {
		var length time.Duration
		if req.Duration != "" {
			if length, err = time.ParseDuration(req.Duration); err != nil {
				return nil, fmt.Errorf("duration: %w", err)
			}
		}
		answer["active"] = !schedule.Next(req.Now.Add(-length)).After(*req.Now)
	}
	return answer, nil
}
