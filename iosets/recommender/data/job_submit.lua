--[[
job_submit.lua example: tag each new job with its IO-SETS set, read from a local file.

`iosets export --format lua` writes iosets.lua; copy it to IOSETS_FILE on the slurmctld
host. This hook only reads that file (dofile, at most every IOSETS_RELOAD seconds): no
network call happens inside slurmctld. The job's name (-J, or the script name) is looked
up as the app: the submitting user's entry for it (users[uid], the numeric uid as Darshan
records it), else the app's (apps), else the conservative default set. Each entry is what
iosets' Recommender.predict_one answers for that app and user, so the hook and an iosets
service agree.

The hook only writes admin_comment ("iosets_set=S iosets_priority=P", plus
" iosets_conservative" for a guess): the IO-SETS priority is a share of the file system's
bandwidth, not a place in Slurm's queue, so the job's priority and nice are left alone.
A prolog or the TBF/cgroup re-run reads the tag back (squeue -O AdminComment).
--]]

local IOSETS_FILE = "/etc/slurm/iosets.lua"
local IOSETS_RELOAD = 60

local iosets_table = nil
local iosets_loaded_at = 0

-- a table of the layout this hook reads (another file would make every lookup fail)
local function iosets_document(t)
	return type(t) == "table" and t.version == 1 and type(t.users) == "table" and type(t.apps) == "table"
		and type(t.default) == "table"
end

local function iosets_load()
	local now = os.time()
	if iosets_table == nil or now - iosets_loaded_at >= IOSETS_RELOAD then
		local ok, t = pcall(dofile, IOSETS_FILE)
		if ok and iosets_document(t) then
			iosets_table = t
		else
			local why = ok and "not an iosets document (version 1)" or tostring(t)
			slurm.log_error("iosets: cannot load %s: %s", IOSETS_FILE, why)
		end
		iosets_loaded_at = now
	end
	return iosets_table
end

local function iosets_lookup(t, uid, app)
	local by_user = uid and t.users[string.format("%d", uid)]
	return (by_user and app and by_user[app]) or (app and t.apps[app]) or t.default
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local t = iosets_load()
	if t == nil then
		return slurm.SUCCESS
	end
	local rec = iosets_lookup(t, job_desc.user_id, job_desc.name)
	local tag = string.format("iosets_set=%d iosets_priority=%g", rec.set, rec.priority)
	if rec.conservative then
		tag = tag .. " iosets_conservative"
	end
	if job_desc.admin_comment ~= nil and job_desc.admin_comment ~= "" then
		tag = job_desc.admin_comment .. " " .. tag
	end
	job_desc.admin_comment = tag
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
