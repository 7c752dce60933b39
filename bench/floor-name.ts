/**
 * The name the raw floors give their sequential nodes: shaped like baton's entries (Curator's protected
 * names, here with a fixed uuid), so that the floors' requests, listings and server work are the size
 * of baton's and the ratios show baton's own work, not a difference in name length.
 */
export const FLOOR_NODE = '_c_00000000-0000-0000-0000-000000000000-lock-';
