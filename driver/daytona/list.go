package daytona

import (
	"context"
	"encoding/json"
	"slices"

	apiclient "github.com/daytonaio/daytona/libs/api-client-go"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// maxListPages bounds one listing: at the control plane's default of 100
// per page, 100 pages are 10,000 sandboxes — far more than one Grove's
// users and projects, and a bound on a control plane that never ends.
const maxListPages = 100

// listSandboxes lists the sandboxes whose labels include labels (and whose
// state is one of states, when given), following the control plane's
// cursor from page to page: a sandbox on the second page is as real as one
// on the first.
func (d *Driver) listSandboxes(ctx context.Context, labels map[string]string, states []apiclient.SandboxState) ([]apiclient.SandboxListItem, error) {
	lj, err := json.Marshal(labels)
	if err != nil {
		return nil, err
	}
	var all []apiclient.SandboxListItem
	cursor := ""
	for range maxListPages {
		req := d.api.SandboxAPI.ListSandboxes(ctx).Labels(string(lj))
		if len(states) > 0 {
			req = req.States(states)
		}
		if cursor != "" {
			req = req.Cursor(cursor)
		}
		list, resp, err := req.Execute()
		if err := mapErr(ctx, "list sandboxes", resp, err); err != nil {
			return nil, err
		}
		all = append(all, list.Items...)
		next := list.GetNextCursor()
		if next == "" || next == cursor {
			return all, nil
		}
		cursor = next
	}
	return nil, errorf(grove.ErrUnavailable, "list sandboxes: more than %d pages", maxListPages)
}

var _ driver.SandboxLister = (*Driver)(nil)

// RunningSandboxes implements driver.SandboxLister: the owners whose Grove
// sandbox is started now, listed without starting any.
func (d *Driver) RunningSandboxes(ctx context.Context) ([]driver.Owner, error) {
	items, err := d.listSandboxes(ctx, map[string]string{LabelManagedBy: managedBy}, []apiclient.SandboxState{apiclient.SANDBOXSTATE_STARTED})
	if err != nil {
		return nil, err
	}
	var out []driver.Owner
	for _, it := range items {
		// The state filter is the control plane's; check it here too.
		if it.State == nil || *it.State != apiclient.SANDBOXSTATE_STARTED {
			continue
		}
		o := driver.Owner{User: it.Labels[LabelUser], Project: it.Labels[LabelProject]}
		if o.User == "" || o.Project == "" || slices.Contains(out, o) {
			continue
		}
		out = append(out, o)
	}
	return out, nil
}
