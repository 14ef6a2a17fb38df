package release

// Candidate is a build as the traffic decision sees it.
type Candidate struct {
	Tag string
	// State is the build's state after this tick.
	State State
	// Percent is the traffic it takes now.
	Percent int32
}

// Weights returns the percent of traffic for each build, in the order given
// (newest first). This is the deploy engine's rule, which the release
// engine refines with canaries and ramps:
//
//   - builds that are leaving (deleting, deleted, timed out) lose their traffic
//     as soon as another build can take it;
//   - builds that keep traffic keep exactly what they have, if that is all of it;
//   - otherwise the newest deployed build takes 100%, so a first build serves
//     as soon as it is deployed;
//   - with no deployed build to take it, traffic stays where it is.
//
// The result always sums to 100 or, when no build has ever taken traffic, to 0.
func Weights(builds []Candidate) []int32 {
	out := make([]int32, len(builds))
	var kept int32
	for i, b := range builds {
		if b.Percent > 0 && !leaving(b.State) {
			out[i] = b.Percent
			kept += b.Percent
		}
	}
	if kept == 100 {
		return out
	}
	for i, b := range builds {
		if b.State == Deployed {
			clear(out)
			out[i] = 100
			return out
		}
	}
	// Nothing can take the traffic: leave it where it is, unless what is
	// stored does not add up, in which case the biggest holder takes all.
	var sum int32
	biggest := -1
	for i, b := range builds {
		p := max(b.Percent, 0)
		out[i] = p
		sum += p
		if p > 0 && (biggest < 0 || p > builds[biggest].Percent) {
			biggest = i
		}
	}
	if sum != 0 && sum != 100 {
		clear(out)
		out[biggest] = 100
	}
	return out
}

func leaving(s State) bool {
	return s == Deleting || s == Deleted || s == TimingOut
}
