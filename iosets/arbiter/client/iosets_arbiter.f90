! iosets_arbiter: the Fortran interface of the IO-SETS arbiter's C client (iosets_arbiter.h), through bind(C).
!
! Compile iosets_arbiter.c with a C compiler and this module with the program. Strings end with a NUL:
!
!   use iosets_arbiter
!   a = iosets_arbiter_open("unix:/run/iosets/arbiter.sock"//c_null_char, "job42"//c_null_char, &
!                           1_c_int, 0.1_c_double, 0.0_c_double)
!   rate = iosets_arbiter_begin(a, real(bytes, c_double))   ! 0: the arbiter is away, run unscheduled
!   ... write a request of n bytes, then: call iosets_arbiter_pace(a, int(n, c_size_t))
!   call iosets_arbiter_end(a)
!   call iosets_arbiter_close(a)
module iosets_arbiter
  use, intrinsic :: iso_c_binding, only: c_ptr, c_char, c_int, c_double, c_size_t
  implicit none
  private
  public :: iosets_arbiter_open, iosets_arbiter_begin, iosets_arbiter_rate, iosets_arbiter_pace
  public :: iosets_arbiter_end, iosets_arbiter_close

  interface
    type(c_ptr) function iosets_arbiter_open(address, job_id, set, priority, timeout_s) &
        bind(C, name="iosets_arbiter_open")
      import :: c_ptr, c_char, c_int, c_double
      character(kind=c_char), intent(in) :: address(*), job_id(*)
      integer(c_int), value :: set
      real(c_double), value :: priority, timeout_s
    end function iosets_arbiter_open

    real(c_double) function iosets_arbiter_begin(a, bytes) bind(C, name="iosets_arbiter_begin")
      import :: c_ptr, c_double
      type(c_ptr), value :: a
      real(c_double), value :: bytes
    end function iosets_arbiter_begin

    real(c_double) function iosets_arbiter_rate(a) bind(C, name="iosets_arbiter_rate")
      import :: c_ptr, c_double
      type(c_ptr), value :: a
    end function iosets_arbiter_rate

    subroutine iosets_arbiter_pace(a, nbytes) bind(C, name="iosets_arbiter_pace")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: a
      integer(c_size_t), value :: nbytes
    end subroutine iosets_arbiter_pace

    subroutine iosets_arbiter_end(a) bind(C, name="iosets_arbiter_end")
      import :: c_ptr
      type(c_ptr), value :: a
    end subroutine iosets_arbiter_end

    subroutine iosets_arbiter_close(a) bind(C, name="iosets_arbiter_close")
      import :: c_ptr
      type(c_ptr), value :: a
    end subroutine iosets_arbiter_close
  end interface
end module iosets_arbiter
