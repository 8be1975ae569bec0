! SPDX-License-Identifier: BSD-3-Clause
! Reductions of Fortran datatypes from Fortran: MPI_REAL8, MPI_INTEGER8,
! MPI_COMPLEX16, MPI_LOGICAL and a type of MPI_TYPE_CREATE_F90_REAL
! (precision 15), with mpif.h (STYLE_MPIF), `use mpi`, or `use mpi_f08`
! (STYLE_F08). Each through MPI_IALLREDUCE (also in place), MPI_IREDUCE
! (every root in turn), MPI_ISCAN and, but with mpi_f08, a persistent
! allreduce (PALLRED: MPI-4's MPI_ALLREDUCE_INIT, or Open MPI 4.1's
! MPIX_ALLREDUCE_INIT; with PERS_SHIM_ONLY, under the shim only: stock
! MPICH 4.0's persistent collectives are wrong, see
! tests/mpi/t_persist.c), started twice. Every
! result is compared bit for bit (TRANSFER to integers) with the blocking
! call's on the same inputs. Sums and products of reals take values
! exact in any order of combination (small integers; for complex
! products 3+i, 4+i, 5+i): the shim's schedules combine in another order
! than stock MPI's. Rank 0 prints the statistics lines the
! shim must print ("expect~:"): every call offloaded.
program f_rtypes
#if defined(STYLE_MPIF)
    implicit none
    include 'mpif.h'
#elif defined(STYLE_F08)
    use mpi_f08
    implicit none
#else
    use mpi
    implicit none
#endif
#ifdef STYLE_F08
#define DTYPE type(MPI_Datatype)
#define OPTYPE type(MPI_Op)
#define REQTYPE type(MPI_Request)
#else
#define DTYPE integer
#define OPTYPE integer
#define REQTYPE integer
#endif
    integer, parameter :: n = 777
    integer :: rank, size, ierr, i, it, errs, total
    integer :: calls(4), allc(4)
    real(8) :: r8s(n), r8r(n), r8f(n)
    integer(8) :: i8s(n), i8r(n), i8f(n)
    complex(8) :: c16s(n), c16r(n), c16f(n)
    logical :: ls(n), lr(n), lf(n)
    DTYPE :: f90r
    logical :: pers
#ifdef PERS_SHIM_ONLY
    character(len=256) :: pre
#endif

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
    call MPI_TYPE_CREATE_F90_REAL(15, MPI_UNDEFINED, f90r, ierr)
#if defined(STYLE_F08)
    pers = .false.
#elif defined(PERS_SHIM_ONLY)
    call get_environment_variable('LD_PRELOAD', pre)
    pers = index(pre, 'dpushim') > 0
#else
    pers = .true.
#endif
    errs = 0
    calls = 0

    do it = 1, 3
        ! MPI_REAL8: sums of small integers, maxima of fractions.
        do i = 1, n
            r8s(i) = dble(mod(i * 37 + rank * 101 + it, 201) - 100)
        end do
        call reals(r8s, MPI_REAL8, MPI_SUM)
        do i = 1, n
            r8s(i) = dble(mod(i * 7919 + rank * 13 + it, 100003)) / 977.0d0
        end do
        call reals(r8s, MPI_REAL8, MPI_MAX)
        ! The F90 real of precision 15 (REAL(KIND=8)): sums and minima.
        do i = 1, n
            r8s(i) = dble(mod(i * 53 + rank * 7 + it, 61) - 30)
        end do
        call reals(r8s, f90r, MPI_SUM)
        do i = 1, n
            r8s(i) = -dble(mod(i * 7907 + rank * 31 + it, 99991)) / 313.0d0
        end do
        call reals(r8s, f90r, MPI_MIN)

        ! MPI_INTEGER8: sums that wrap, bitwise exclusive or.
        do i = 1, n
            i8s(i) = ior(ishft(int(mod(i * 7 + rank + it, 8), 8), 60), &
                         int(i, 8) * 40503_8 + int(rank * 977 + it, 8))
        end do
        call ints(MPI_SUM)
        call ints(MPI_BXOR)

        ! MPI_COMPLEX16: products of 3+i, 4+i and 5+i (no part of a
        ! product is zero: a zero's sign would depend on the order), sums.
        do i = 1, n
            c16s(i) = cmplx(3 + mod(i + rank + it, 3), 1, 8)
        end do
        call cplx(MPI_PROD)
        do i = 1, n
            c16s(i) = cmplx(mod(i * 11 + rank, 41) - 20, &
                            mod(i * 5 + rank * 3 + it, 37) - 18, 8)
        end do
        call cplx(MPI_SUM)

        ! MPI_LOGICAL: and, or, exclusive or.
        do i = 1, n
            ls(i) = mod(i * (rank + 2) + it, 3) /= 0
        end do
        call logic(MPI_LAND)
        call logic(MPI_LOR)
        call logic(MPI_LXOR)
    end do

    call MPI_REDUCE(calls, allc, 4, MPI_INTEGER, MPI_SUM, 0, &
                    MPI_COMM_WORLD, ierr)
    call MPI_ALLREDUCE(errs, total, 1, MPI_INTEGER, MPI_SUM, &
                       MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        write (*, '(a,i0,a)') 'expect~: iallreduce offloaded=', allc(1), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: ireduce offloaded=', allc(2), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: iscan offloaded=', allc(3), &
            ' fallback=0 bytes=[0-9]+'
        if (allc(4) > 0) then
            write (*, '(a,i0,a)') 'expect~: allreduce_init offloaded=', &
                allc(4), ' fallback=0 bytes=[0-9]+'
        end if
        if (total == 0) then
            write (*, '(a)') 'result: ok'
        else
            write (*, '(a,i0,a)') 'result: FAILED (', total, ' errors)'
        end if
    end if
    call MPI_FINALIZE(ierr)

contains

    ! r8s reduced with op as type dt (MPI_REAL8 or the F90 real).
    subroutine reals(s, dt, op)
        real(8), intent(in) :: s(n)
        DTYPE, intent(in) :: dt
        OPTYPE, intent(in) :: op
        REQTYPE :: req
        integer :: root, k

        root = mod(it, size)
        call MPI_ALLREDUCE(s, r8f, n, dt, op, MPI_COMM_WORLD, ierr)
        r8r = -7.0d0
        call MPI_IALLREDUCE(s, r8r, n, dt, op, MPI_COMM_WORLD, req, ierr)
        call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
        call same_r8('iallreduce')
        r8r = s
        call MPI_IALLREDUCE(MPI_IN_PLACE, r8r, n, dt, op, MPI_COMM_WORLD, &
                            req, ierr)
        call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
        call same_r8('iallreduce in place')
        calls(1) = calls(1) + 2
        call MPI_REDUCE(s, r8f, n, dt, op, root, MPI_COMM_WORLD, ierr)
        r8r = -7.0d0
        call MPI_IREDUCE(s, r8r, n, dt, op, root, MPI_COMM_WORLD, req, ierr)
        call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
        if (rank == root) call same_r8('ireduce')
        calls(2) = calls(2) + 1
        call MPI_SCAN(s, r8f, n, dt, op, MPI_COMM_WORLD, ierr)
        call MPI_ISCAN(s, r8r, n, dt, op, MPI_COMM_WORLD, req, ierr)
        call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
        call same_r8('iscan')
        calls(3) = calls(3) + 1
#ifndef STYLE_F08
        if (pers) then
            call MPI_ALLREDUCE(s, r8f, n, dt, op, MPI_COMM_WORLD, ierr)
            call PALLRED(s, r8r, n, dt, op, MPI_COMM_WORLD, &
                         MPI_INFO_NULL, req, ierr)
            do k = 1, 2
                r8r = -7.0d0
                call MPI_START(req, ierr)
                call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
                call same_r8('allreduce_init')
                calls(4) = calls(4) + 1
            end do
            call MPI_REQUEST_FREE(req, ierr)
        end if
#else
        k = 0
#endif
    end subroutine reals

    subroutine same_r8(what)
        character(len=*), intent(in) :: what

        if (any(transfer(r8r, 0_8, n) /= transfer(r8f, 0_8, n))) then
            errs = errs + 1
            write (*, '(a,i0,2a)') 'rank ', rank, ': FAIL real(8) ', what
        end if
    end subroutine same_r8

    subroutine ints(op)
        OPTYPE, intent(in) :: op
        REQTYPE :: req

        call MPI_ALLREDUCE(i8s, i8f, n, MPI_INTEGER8, op, MPI_COMM_WORLD, &
                           ierr)
        i8r = 0
        call MPI_IALLREDUCE(i8s, i8r, n, MPI_INTEGER8, op, MPI_COMM_WORLD, &
                            req, ierr)
        call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
        if (any(i8r /= i8f)) call fail('integer(8) iallreduce')
        calls(1) = calls(1) + 1
        call MPI_SCAN(i8s, i8f, n, MPI_INTEGER8, op, MPI_COMM_WORLD, ierr)
        call MPI_ISCAN(i8s, i8r, n, MPI_INTEGER8, op, MPI_COMM_WORLD, req, &
                       ierr)
        call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
        if (any(i8r /= i8f)) call fail('integer(8) iscan')
        calls(3) = calls(3) + 1
    end subroutine ints

    subroutine cplx(op)
        OPTYPE, intent(in) :: op
        REQTYPE :: req
        integer :: root

        root = mod(it + 1, size)
        call MPI_ALLREDUCE(c16s, c16f, n, MPI_COMPLEX16, op, &
                           MPI_COMM_WORLD, ierr)
        c16r = c16s
        call MPI_IALLREDUCE(MPI_IN_PLACE, c16r, n, MPI_COMPLEX16, op, &
                            MPI_COMM_WORLD, req, ierr)
        call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
        if (any(transfer(c16r, 0_8, 2 * n) /= transfer(c16f, 0_8, 2 * n))) &
            call fail('complex(16) iallreduce in place')
        calls(1) = calls(1) + 1
        call MPI_REDUCE(c16s, c16f, n, MPI_COMPLEX16, op, root, &
                        MPI_COMM_WORLD, ierr)
        c16r = (0.0d0, 0.0d0)
        call MPI_IREDUCE(c16s, c16r, n, MPI_COMPLEX16, op, root, &
                         MPI_COMM_WORLD, req, ierr)
        call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
        if (rank == root) then
            if (any(transfer(c16r, 0_8, 2 * n) /= &
                    transfer(c16f, 0_8, 2 * n))) &
                call fail('complex(16) ireduce')
        end if
        calls(2) = calls(2) + 1
    end subroutine cplx

    subroutine logic(op)
        OPTYPE, intent(in) :: op
        REQTYPE :: req

        call MPI_ALLREDUCE(ls, lf, n, MPI_LOGICAL, op, MPI_COMM_WORLD, ierr)
        lr = .false.
        call MPI_IALLREDUCE(ls, lr, n, MPI_LOGICAL, op, MPI_COMM_WORLD, &
                            req, ierr)
        call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
        if (any(transfer(lr, 0, n) /= transfer(lf, 0, n))) &
            call fail('logical iallreduce')
        calls(1) = calls(1) + 1
        call MPI_SCAN(ls, lf, n, MPI_LOGICAL, op, MPI_COMM_WORLD, ierr)
        call MPI_ISCAN(ls, lr, n, MPI_LOGICAL, op, MPI_COMM_WORLD, req, ierr)
        call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
        if (any(transfer(lr, 0, n) /= transfer(lf, 0, n))) &
            call fail('logical iscan')
        calls(3) = calls(3) + 1
    end subroutine logic

    subroutine fail(what)
        character(len=*), intent(in) :: what

        errs = errs + 1
        write (*, '(a,i0,2a)') 'rank ', rank, ': FAIL ', what
    end subroutine fail

end program f_rtypes
