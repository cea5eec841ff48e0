package state

// document is state.json as the server holds it (and as Go's Save writes a State).
type document struct {
	Home            HomeRef   `json:"home"`
	Repo            string    `json:"repo,omitempty"`
	Workspace       string    `json:"workspace,omitempty"`
	Source          string    `json:"source,omitempty"`
	Sessions        []Session `json:"sessions"`
	StatusMessageID string    `json:"statusMessageID,omitempty"`
	InstanceID      string    `json:"instanceID,omitempty"`
}

// overlay is what ApplyDefaults seeded: shown in a State's fields where the document has
// nothing, never written.
type overlay struct {
	home                 *HomeRef
	workspace, source    string
	hasWorkspace, hasSrc bool
}

func copySession(s Session) Session {
	if s.Gateways != nil {
		s.Gateways = append([]string{}, s.Gateways...)
	}
	if s.Participants != nil {
		s.Participants = append([]string{}, s.Participants...)
	}
	return s
}

func copySessions(in []Session) []Session {
	if in == nil {
		return nil
	}
	out := make([]Session, len(in))
	for i, s := range in {
		out[i] = copySession(s)
	}
	return out
}

func (d document) clone() document {
	d.Sessions = copySessions(d.Sessions)
	return d
}

// fields is the document a State's exported fields hold, with the overlay taken out again
// where it shows (a seeded value the document itself does not have).
func (s *State) fields() document {
	d := s.fieldsView()
	d.Sessions = copySessions(d.Sessions)
	return d
}

// fieldsView is fields with Sessions sharing the State's slice: to compare, not to keep.
func (s *State) fieldsView() document {
	d := document{Home: s.Home, Repo: s.Repo, Workspace: s.Workspace, Source: s.Source, Sessions: s.Sessions, StatusMessageID: s.StatusMessageID, InstanceID: s.InstanceID}
	o := s.defaults
	if o.home != nil && d.Home == *o.home && s.base.Home.ID == "" {
		d.Home = s.base.Home
	}
	if o.hasWorkspace && d.Workspace == o.workspace && s.base.Workspace == "" {
		d.Workspace = s.base.Workspace
	}
	if o.hasSrc && d.Source == o.source && s.base.Source == "" {
		d.Source = s.base.Source
	}
	return d
}

// show puts d into the exported fields with the overlay applied: persisted > config > empty.
func (s *State) show(d document) {
	s.Home, s.Repo, s.Workspace, s.Source = d.Home, d.Repo, d.Workspace, d.Source
	s.Sessions = copySessions(d.Sessions)
	s.StatusMessageID, s.InstanceID = d.StatusMessageID, d.InstanceID
	o := s.defaults
	if o.home != nil && s.Home.ID == "" {
		s.Home = *o.home
	}
	if o.hasWorkspace && s.Workspace == "" {
		s.Workspace = o.workspace
	}
	if o.hasSrc && s.Source == "" {
		s.Source = o.source
	}
}
