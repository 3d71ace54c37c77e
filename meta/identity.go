package meta

import "fmt"

// ClaimNode records n as the identity of the node that owns this store, or,
// when one is recorded, checks that n is it: a node's name and ordinal are
// part of its event ids and archive keys (DESIGN.md §6 item 1), so a data
// directory never changes hands.
func (s *Store) ClaimNode(n Node) error {
	stored, found, err := s.NodeIdentity()
	if err != nil {
		return err
	}
	if !found {
		return s.SetNodeIdentity(n)
	}
	if stored.Name != n.Name || stored.Ordinal != n.Ordinal {
		return fmt.Errorf("belongs to node %q (ordinal %d), not %q (ordinal %d): a node's name and ordinal are part of its event ids and archive keys; use the original node.name and node.ordinal or another data_dir",
			stored.Name, stored.Ordinal, n.Name, n.Ordinal)
	}
	return nil
}
