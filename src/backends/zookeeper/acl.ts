/**
 * Who may do what with the znodes baton creates (entries and the directories above them).
 * - `open`: everyone may do everything (ZooKeeper's `OPEN_ACL_UNSAFE`); the only policy without credentials.
 * - `creator-all-world-read`: the authenticated creator may do everything, everyone may read (so that
 *   `baton inspect` works): nobody else can create, delete or change entries in the queues.
 * - `creator-only`: only the authenticated creator may do anything, reading included.
 *
 * In a module of its own, which imports nothing: the public types reach it, and a user's project then
 * needs no type declarations of node-zookeeper-client.
 */
export type AclPolicy = 'open' | 'creator-all-world-read' | 'creator-only';
