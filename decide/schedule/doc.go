// Package schedule decides when a release may start: the always, inhumane and
// humane schedules, the holiday calendar they share, and the
// --humane-releases-enabled kill switch. Nothing here reads a clock: every
// decision takes the instant as an input, so it is table-tested on fixed
// dates.
//
// Every rule works in one time zone, America/Los_Angeles: an instant is
// converted to LA first, and its calendar day, weekday and hour are all read
// there. The tz database is embedded (time/tzdata), so loading the zone does
// not depend on the image having /usr/share/zoneinfo.
package schedule
