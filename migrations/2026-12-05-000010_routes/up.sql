-- The route (`[[forms.F.routes]]`) a submission took when it was accepted: the route's
-- name, or `#INDEX` for an unnamed one. NULL: no route applied (the form's own effects and
-- notify). Kept as stored when the routes change.
ALTER TABLE submissions ADD COLUMN route TEXT;
