package state

// Equality of documents and rows, as reflect.DeepEqual tells it (a nil slice differs from an
// empty one) without reflection: every session setter compares this State's fields with the
// document they were built from, and a reflective walk over every row cost more CPU than the
// rest of the call on the Go side. equal_test.go checks that each field of Session and
// document is compared.

func sameStrings(a, b []string) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameSession(a, b *Session) bool {
	return a.ID == b.ID && a.Incarnation == b.Incarnation && a.Name == b.Name && a.ChannelID == b.ChannelID &&
		a.Type == b.Type && a.Cmd == b.Cmd && a.Backend == b.Backend && a.Vendor == b.Vendor &&
		a.ModelID == b.ModelID && a.Worktree == b.Worktree && a.Dir == b.Dir && a.Project == b.Project &&
		a.Agent == b.Agent && a.ResumeToken == b.ResumeToken && a.Archived == b.Archived && a.Owned == b.Owned &&
		a.Extractor == b.Extractor && a.Journal == b.Journal && a.ConsolidateEvery == b.ConsolidateEvery &&
		sameStrings(a.Gateways, b.Gateways) && sameStrings(a.Participants, b.Participants) &&
		a.Parent == b.Parent && sameFloat(a.CostCap, b.CostCap) && a.TokenCap == b.TokenCap &&
		sameFloat(a.CohortCostCap, b.CohortCostCap) && a.CohortTokenCap == b.CohortTokenCap &&
		a.PausedReason == b.PausedReason
}

// sameFloat is DeepEqual's float compare: ==, so a NaN differs even from itself.
func sameFloat(a, b float64) bool { return a == b }

func sameSessions(a, b []Session) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameSession(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

func sameDocument(a, b *document) bool {
	return a.Home == b.Home && a.Repo == b.Repo && a.Workspace == b.Workspace && a.Source == b.Source &&
		a.StatusMessageID == b.StatusMessageID && a.InstanceID == b.InstanceID && sameSessions(a.Sessions, b.Sessions)
}
