-- Tenancy: a branch is checked out at most once per (repo cache, user).
-- Two users may each have a workspace on the same branch name of one repo
-- (their unpushed work lives in separate work repositories; they meet only
-- at the remote), and one user's workspace never makes another's acquire
-- answer "already checked out". Detached workspaces (empty branch) are
-- exempt.
DROP INDEX workspaces_branch;
CREATE UNIQUE INDEX workspaces_branch ON workspaces (repo_cache_id, user_id, branch) WHERE branch <> '';
